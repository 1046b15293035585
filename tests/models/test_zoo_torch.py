"""The demo zoo on PyTorch: the backend hook, the weights taken from the ONNX initializers, and,
where torch is installed, logits and end-to-end answers equal to onnxruntime's (and, on a CUDA
host, CUDA equal to CPU). Without torch, the torch tests skip with the reason."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from onnx import numpy_helper

from lanes.errors import LanesError
from lanes.models.base import Device, Model
from lanes.models.images import sample_images
from lanes.models.zoo import (
    ZOO_NAMES,
    OnnxZooModel,
    ZooModel,
    model_proto,
    onnx_path,
    spec,
    zoo_model,
    zoo_models,
)
from lanes.models.zoo_torch import TorchZooModel, torch_module, zoo_state

CPU = Device("cpu", 0, 1)
NO_TORCH = "torch is not installed (pip install 'lanes[torch]')"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One zoo cache for the module: every model generated once."""
    root = tmp_path_factory.mktemp("zoo-cache")
    for name in ZOO_NAMES:
        onnx_path(name, root)
    return root


@pytest.fixture(scope="module")
def torch() -> Any:
    return pytest.importorskip("torch", reason=NO_TORCH)


@pytest.fixture(scope="module")
def onnx_zoo(cache: Path) -> dict[str, Model]:
    return {m.name: m.replica(CPU) for m in zoo_models(cache_dir=cache)}


@pytest.fixture(scope="module")
def torch_zoo(torch: Any, cache: Path) -> dict[str, Model]:
    return {m.name: m.replica(CPU) for m in zoo_models(cache_dir=cache, backend="torch")}


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    """Encoded sample images by kind (``char``, ``line``), four of each, as BYTES tensors."""
    paths = sample_images(tmp_path_factory.mktemp("images"), count_per_model=4)
    out = {}
    for kind in ("char", "line"):
        data = [p.read_bytes() for p in paths if p.parent.name == kind]
        out[kind] = np.empty(len(data), dtype=object)
        out[kind][:] = data
    return out


def raw_batch(name: str, rows: int, seed: int = 0) -> np.ndarray:
    """``rows`` random model-input rows of zoo model ``name`` (float32 in [0, 1))."""
    return np.random.default_rng(seed).random((rows, *spec(name).input_shape), dtype=np.float32)


# -- without torch --------------------------------------------------------------------------------


def test_without_torch_the_backend_says_how_to_get_it(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now fails, installed or not
    message = "zoo model 'misc_cls' on the torch backend needs PyTorch: pip install 'lanes[torch]'"
    for make in (
        lambda: zoo_models(["misc_cls"], cache_dir=cache, backend="torch"),
        lambda: torch_module("misc_cls"),
    ):
        with pytest.raises(LanesError) as info:
            make()
        assert (info.value.code, info.value.message) == ("missing_dependency", message)


def test_onnx_is_the_default_backend_and_unknown_backends_are_refused(cache: Path) -> None:
    for models in (zoo_models(cache_dir=cache), zoo_models(cache_dir=cache, backend="onnx")):
        assert [type(m) for m in models] == [OnnxZooModel] * len(ZOO_NAMES)
        assert {m.platform for m in models} == {"onnxruntime_onnx"}
    with pytest.raises(LanesError) as info:
        zoo_model("misc_cls", cache, backend="tensorrt")
    assert info.value.code == "bad_argument"
    assert info.value.message == "zoo backend 'tensorrt': unknown; allowed are onnx, torch"
    with pytest.raises(LanesError) as info:
        zoo_model("misc_cls", cache, backend="onnx", cuda_graphs=True)
    assert (info.value.code, info.value.message) == (
        "bad_argument",
        "zoo backend 'onnx': CUDA graphs need the torch backend",
    )


@pytest.mark.parametrize("name", ZOO_NAMES)
def test_the_state_is_the_onnx_initializers(name: str) -> None:
    proto = model_proto(name)
    init = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    state, pools = zoo_state(name, proto)
    assert all(v.dtype == np.float32 for v in state.values())
    np.testing.assert_array_equal(state["features.conv1.weight"], init["conv_1.weight"])
    np.testing.assert_array_equal(state["features.conv3.bias"], init["conv_9.bias"])
    if spec(name).task == "char":
        assert pools == [[2, 2]] * 3
        assert len(state) == 10
        np.testing.assert_array_equal(state["fc2.weight"], init["fc_17.weight"])
        return
    assert pools == [[2, 2], [2, 2], [2, 1]]
    assert len(state) == 6 + 8 + 2
    h = spec(name).hidden
    w, r, b = init["gru.W"], init["gru.R"], init["gru.B"]
    # ONNX gate blocks z, r, h → torch r, z, n; B is [Wb, Rb] per direction.
    for d, suffix in enumerate(("", "_reverse")):
        for onnx_block, torch_block in ((0, 1), (1, 0), (2, 2)):
            o, t = (
                slice(onnx_block * h, (onnx_block + 1) * h),
                slice(torch_block * h, (torch_block + 1) * h),
            )
            np.testing.assert_array_equal(state[f"gru.weight_ih_l0{suffix}"][t], w[d][o])
            np.testing.assert_array_equal(state[f"gru.weight_hh_l0{suffix}"][t], r[d][o])
            np.testing.assert_array_equal(state[f"gru.bias_ih_l0{suffix}"][t], b[d][o])
            np.testing.assert_array_equal(state[f"gru.bias_hh_l0{suffix}"][t], b[d][3 * h :][o])
    np.testing.assert_array_equal(state["proj.weight"], init["proj.weight"].T)
    np.testing.assert_array_equal(state["proj.bias"], init["proj.bias"])


def test_another_graph_is_refused() -> None:
    with pytest.raises(LanesError) as info:
        zoo_state("line_rnn_en", model_proto("misc_cls"))
    assert info.value.code == "model_invalid"
    assert info.value.message == "zoo model 'line_rnn_en': the ONNX graph has 0 GRU nodes, not 1"


# -- with torch -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ZOO_NAMES)
def test_module_logits_equal_onnxruntime(torch: Any, cache: Path, name: str) -> None:
    session = ort.InferenceSession(str(onnx_path(name, cache)), providers=["CPUExecutionProvider"])
    net = torch_module(name)
    assert isinstance(net, torch.nn.Module) and not net.training
    for rows in (1, spec(name).max_batch_size):
        x = raw_batch(name, rows)
        (expected,) = session.run(["logits"], {"x": x})
        with torch.inference_mode():
            got = net(torch.from_numpy(x)).numpy()
        assert got.shape == expected.shape == (rows, *spec(name).output_shape)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_a_proto_of_another_model_is_refused(torch: Any) -> None:
    with pytest.raises(LanesError) as info:
        torch_module("char_cnn", model_proto("misc_cls"))
    assert info.value.code == "model_invalid"
    assert "does not fit the zoo's char network" in info.value.message


@pytest.mark.parametrize("name", ZOO_NAMES)
def test_end_to_end_answers_equal_the_onnx_zoo(
    onnx_zoo: dict[str, Model],
    torch_zoo: dict[str, Model],
    images: dict[str, np.ndarray],
    name: str,
) -> None:
    ours, theirs = torch_zoo[name], onnx_zoo[name]
    assert isinstance(ours, TorchZooModel) and ours.platform == "pytorch_libtorch"
    assert isinstance(ours, ZooModel) and not isinstance(ours, OnnxZooModel)
    assert (ours.inputs, ours.outputs, ours.batching) == (
        theirs.inputs,
        theirs.outputs,
        theirs.batching,
    )
    task = spec(name).task
    for request in (
        {"image": images[task]},
        {"image": (raw_batch(name, 3, seed=5)[:, 0] * 255).astype(np.uint8)},
    ):
        item = ours.preprocess(request)
        logits = ours.predict(item)
        assert list(logits) == ["logits"]
        np.testing.assert_allclose(
            logits["logits"], theirs.predict(item)["logits"], rtol=1e-4, atol=1e-4
        )
        got, want = ours.postprocess(logits), theirs.postprocess(theirs.predict(item))
        assert list(got) == list(want)
        for key in ("label", "class", "text"):
            if key in want:
                assert list(got[key]) == list(want[key])
        if "score" in want:
            assert got["score"].dtype == np.float32
            np.testing.assert_allclose(got["score"], want["score"], rtol=1e-4, atol=1e-5)


def test_collate_then_split_equals_running_each_request_alone(
    torch_zoo: dict[str, Model], images: dict[str, np.ndarray]
) -> None:
    model = torch_zoo["line_rnn_zh"]
    requests = [images["line"][:1], images["line"][1:4]]
    items = [model.preprocess({"image": r}) for r in requests]
    parts = model.split(model.predict(model.collate(items)), [1, 3])
    for part, item in zip(parts, items, strict=True):
        alone = model.predict(item)
        np.testing.assert_allclose(part["logits"], alone["logits"], rtol=1e-4, atol=1e-4)
        assert list(model.postprocess(part)["text"]) == list(model.postprocess(alone)["text"])


def test_devices_threads_and_refusals(torch: Any, cache: Path) -> None:
    model = zoo_model("misc_cls", cache, backend="torch")
    with pytest.raises(RuntimeError, match="not loaded"):
        model.predict({"x": raw_batch("misc_cls", 1)})
    threads = torch.get_num_threads()
    try:
        model.replica(Device("cpu", 0, threads=2))
        assert torch.get_num_threads() == 2
        sim = model.replica(Device("sim", 3, threads=8))
        assert torch.get_num_threads() == 1
        assert sim.predict({"x": raw_batch("misc_cls", 2)})["logits"].shape == (2, 4)
    finally:
        torch.set_num_threads(threads)
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    with pytest.raises(LanesError) as info:
        model.replica(Device("cuda", count))
    assert info.value.code == "device_unavailable"
    assert f"on cuda:{count}: torch sees {count} CUDA device" in info.value.message
    with pytest.raises(LanesError) as info:
        model.replica(Device("tpu", 0))
    assert info.value.code == "device_unavailable"


def test_an_unreadable_onnx_file_is_refused_at_load(torch: Any, tmp_path: Path) -> None:
    model = zoo_model("misc_cls", tmp_path, backend="torch")
    assert isinstance(model, TorchZooModel)
    model.path.write_bytes(b"not an onnx file")
    with pytest.raises(LanesError) as info:
        model.replica(CPU)
    assert info.value.code == "model_invalid"
    assert str(model.path) in info.value.message


def test_cuda_logits_equal_cpu(torch: Any, cache: Path) -> None:
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    for model in zoo_models(cache_dir=cache, backend="torch"):
        x = raw_batch(model.name, spec(model.name).max_batch_size, seed=7)
        cpu = model.replica(CPU).predict({"x": x})["logits"]
        for index in range(torch.cuda.device_count()):
            gpu = model.replica(Device("cuda", index)).predict({"x": x})["logits"]
            assert gpu.dtype == np.float32 and gpu.shape == cpu.shape
            # cuDNN convolutions may use TF32 (PyTorch's default): ~1e-3 relative.
            np.testing.assert_allclose(gpu, cpu, rtol=1e-2, atol=1e-2 * np.abs(cpu).max())


def test_cuda_graphs_run_eagerly_off_cuda(torch: Any, cache: Path) -> None:
    """On a CPU device, ``cuda_graphs`` changes nothing: the replica runs its module eagerly."""
    (plain,) = zoo_models(["char_cnn"], cache_dir=cache, backend="torch")
    (graphed,) = zoo_models(["char_cnn"], cache_dir=cache, backend="torch", cuda_graphs=True)
    assert isinstance(graphed, TorchZooModel) and graphed.cuda_graphs
    x = raw_batch("char_cnn", 3, seed=2)
    replica = graphed.replica(CPU)
    assert replica._graphs is None
    np.testing.assert_array_equal(
        replica.predict({"x": x})["logits"], plain.replica(CPU).predict({"x": x})["logits"]
    )


def _replay_and_compare(
    model: Model, batches: dict[int, np.ndarray], want: dict[int, np.ndarray], runner: Any
) -> int:
    """Three rounds of every batch through ``model`` on this thread, each equal to ``want``;
    the number of shapes this thread then replays through a graph."""
    for _ in range(3):
        for n, x in batches.items():  # TF32 may differ between algorithms: ~1e-3 relative
            got = model.predict({"x": x})["logits"]
            tol = 1e-2 * float(np.abs(want[n]).max())
            np.testing.assert_allclose(got, want[n], rtol=1e-2, atol=tol)
    return int(runner.captured())


def test_cuda_graph_replays_equal_eager_calls_on_every_thread(torch: Any, cache: Path) -> None:
    """Through CUDA graphs, each batch size's logits equal the eager module's on the same GPU,
    from two threads at once (each captures and replays its own graphs; a batch of 3 padded to
    the bucket of 4, after a batch of 4 left its rows there), and a replay's output is a copy
    that the next replay does not overwrite."""
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    from concurrent.futures import ThreadPoolExecutor

    from lanes.models.cuda_graphs import GraphRunner

    gpu = Device("cuda", 0)
    for name in ("char_cnn", "line_rnn_zh"):
        (plain,) = zoo_models([name], cache_dir=cache, backend="torch")
        (graphed,) = zoo_models([name], cache_dir=cache, backend="torch", cuda_graphs=True)
        eager, replayed = plain.replica(gpu), graphed.replica(gpu)
        runner = replayed._graphs
        assert isinstance(runner, GraphRunner)
        sizes = (1, 2, 4, 3, spec(name).max_batch_size)
        batches = {n: raw_batch(name, n, seed=n) for n in sizes}
        want = {n: eager.predict({"x": x})["logits"] for n, x in batches.items()}
        graphs = len({runner.bucket(n) for n in sizes})  # 1, 2, 4 (3's too) and the largest
        assert graphs == 4
        with ThreadPoolExecutor(2) as pool:
            done = [pool.submit(_replay_and_compare, replayed, batches, want, runner)]
            done.append(pool.submit(_replay_and_compare, replayed, batches, want, runner))
            assert [f.result() for f in done] == [graphs, graphs]
        first = replayed.predict({"x": batches[1]})["logits"].copy()
        kept = replayed.predict({"x": batches[1]})["logits"]
        replayed.predict({"x": raw_batch(name, 1, seed=99)})
        np.testing.assert_array_equal(kept, first)
