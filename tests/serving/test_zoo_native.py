"""The demo zoo runs natively in ``lanes serve`` (lanes-server's ``zoo``: image decode, resize,
normalise, the ONNX graph, argmax/softmax and CTC in Rust): its answers equal the Python zoo's
(:class:`lanes.models.zoo.OnnxZooModel`'s preprocess → predict → postprocess) on real sample
images — PNG, JPEG, RGBA PNG and raw gray levels — within float tolerance, and bad images are
refused with 400 while the server keeps serving. Driven by ``tritonclient.http`` (binary
tensors), a client nobody here wrote."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.http as httpclient
from PIL import Image
from tritonclient.utils import InferenceServerException

from lanes.models.base import Arrays, Device
from lanes.models.images import glyph_image, line_image
from lanes.models.zoo import ZOO_NAMES, OnnxZooModel, ZooModel, zoo_models
from lanes.serving import Handle, ServeConfig, start_in_thread

CPU = Device("cpu", 0, 1)
SCORE_TOLERANCE = {"PNG": 1e-5, "RGBA": 1e-5, "JPEG": 2e-3, "raw": 1e-5}
"""Largest difference of a class probability, per input form. Lossless images decode to the same
gray levels, so only float32 rounding in the resamplers differs (measured: 1e-8). JPEG decoders
(Pillow's libjpeg, the image crate's zune-jpeg) may differ by a gray level here and there
(measured: up to 1.3e-4 on ``misc_cls``)."""


@pytest.fixture(scope="module")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> list[ZooModel]:
    return zoo_models(cache_dir=tmp_path_factory.mktemp("zoo"))


@pytest.fixture(scope="module")
def live(zoo: list[ZooModel]) -> Iterator[Handle]:
    config = ServeConfig(port=0, metrics_port=None, devices="cpu:2", warmup_batches=1)
    with start_in_thread(config, zoo) as handle:
        yield handle


def images(task: str, n: int) -> list[bytes]:
    rng = np.random.default_rng(7)
    draw = glyph_image if task == "char" else line_image
    return [draw(rng) for _ in range(n)]


def reencode(png: bytes, fmt: str) -> bytes:
    img = Image.open(io.BytesIO(png))
    if fmt == "RGBA":  # the ink in colour, the paper transparent
        gray = np.asarray(img.convert("L"))
        rgba = np.zeros((*gray.shape, 4), dtype=np.uint8)
        rgba[..., 0] = 255 - gray
        rgba[..., 3] = np.where(gray > 128, 0, 255)
        img, fmt = Image.fromarray(rgba, "RGBA"), "PNG"
    out = io.BytesIO()
    img.save(out, format=fmt, **({"quality": 95} if fmt == "JPEG" else {}))
    return out.getvalue()


def infer(url: str, model: str, data: np.ndarray, datatype: str) -> dict[str, np.ndarray]:
    # Closed here, not left to the garbage collector: a collection can run on a server's
    # executor thread (in this process), and the client's finaliser would make a gevent hub
    # there, which gevent cannot free safely with that thread's Python state.
    with httpclient.InferenceServerClient(url.removeprefix("http://")) as client:
        tensor = httpclient.InferInput("image", list(data.shape), datatype)
        tensor.set_data_from_numpy(data, binary_data=True)
        result = client.infer(model, [tensor])
    answer = result.get_response()
    return {o["name"]: result.as_numpy(o["name"]) for o in answer["outputs"]}


def python_zoo(model: ZooModel, data: np.ndarray) -> dict[str, np.ndarray]:
    replica = model.replica(CPU)
    return replica.postprocess(replica.predict(replica.preprocess({"image": data})))


def same(native: dict[str, np.ndarray], python: dict[str, Any], task: str, form: str) -> None:
    if task == "line":
        assert [bytes(t) for t in native["text"]] == [t.encode() for t in python["text"]]
        return
    assert native["class"].tolist() == python["class"].tolist()
    assert [bytes(b) for b in native["label"]] == [str(s).encode() for s in python["label"]]
    np.testing.assert_allclose(native["score"], python["score"], atol=SCORE_TOLERANCE[form])


@pytest.mark.parametrize("name", ZOO_NAMES)
@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "RGBA"])
def test_encoded_images_answer_as_the_python_zoo(
    live: Handle, zoo: list[ZooModel], name: str, fmt: str
) -> None:
    model = next(m for m in zoo if m.name == name)
    pngs = images(model.task, 6)
    data = np.array([png if fmt == "PNG" else reencode(png, fmt) for png in pngs], dtype=object)
    same(infer(live.url, name, data, "BYTES"), python_zoo(model, data), model.task, fmt)


@pytest.mark.parametrize("name", ["char_cnn", "line_rnn_en"])
def test_raw_gray_levels_answer_as_the_python_zoo(
    live: Handle, zoo: list[ZooModel], name: str
) -> None:
    model = next(m for m in zoo if m.name == name)
    shape = (32, 32) if model.task == "char" else (32, 120)
    gray = [
        np.asarray(Image.open(io.BytesIO(p)).convert("L").resize(shape[::-1]))
        for p in images(model.task, 4)
    ]
    raw = np.stack(gray).astype(np.uint8)
    same(infer(live.url, name, raw, "UINT8"), python_zoo(model, raw), model.task, "raw")
    floats = (raw.astype(np.float32) / 255)[:, None]
    same(infer(live.url, name, floats, "FP32"), python_zoo(model, floats), model.task, "raw")


def test_a_bad_image_is_refused_with_400_and_the_server_keeps_serving(
    live: Handle, zoo: list[ZooModel]
) -> None:
    for bad, words in [(b"hello", "not a PNG or JPEG image"), (b"", "empty (0 bytes)")]:
        with pytest.raises(InferenceServerException) as err:
            infer(live.url, "char_cnn", np.array([bad], dtype=object), "BYTES")
        assert words in str(err.value) and "input 'image'[0]" in str(err.value), err.value
        assert err.value.status() == "400"
    png = images("char", 1)
    out = infer(live.url, "char_cnn", np.array(png, dtype=object), "BYTES")
    assert out["class"].shape == (1,)


def test_the_zoo_runs_natively(live: Handle, zoo: list[ZooModel], tmp_path: Path) -> None:
    """No replica is loaded in Python: the native runner holds the sessions."""
    assert live.server.native_models == ["zoo"] * len(ZOO_NAMES)
    assert all(r is None for replicas in live.server.replicas for r in replicas)


class PythonNetwork(OnnxZooModel):
    """A zoo model whose network runs in Python (as on ``cuda:N`` or the ``torch`` backend) and
    whose pre- and post-processing are the zoo's own: the server runs them in Rust."""

    def predict(self, batch: Arrays) -> Arrays:
        return super().predict(batch)


class OwnHooks(PythonNetwork):
    def postprocess(self, output: Arrays) -> Arrays:
        return super().postprocess(output)


def as_class(model: ZooModel, cls: type[ZooModel]) -> ZooModel:
    keep = {f.name: getattr(model, f.name) for f in dataclasses.fields(model) if f.init}
    return cls(**keep)


@pytest.fixture(scope="module")
def python_network(zoo: list[ZooModel]) -> Iterator[Handle]:
    models = [as_class(m, PythonNetwork) for m in zoo]
    config = ServeConfig(port=0, metrics_port=None, devices="cpu:2", warmup_batches=1)
    with start_in_thread(config, models) as handle:
        yield handle


@pytest.mark.parametrize("name", ZOO_NAMES)
def test_a_python_network_gets_the_zoos_rust_hooks_and_the_same_answers(
    python_network: Handle, live: Handle, zoo: list[ZooModel], name: str
) -> None:
    model = next(m for m in zoo if m.name == name)
    data = np.array(images(model.task, 5), dtype=object)
    got = infer(python_network.url, name, data, "BYTES")
    same(got, python_zoo(model, data), model.task, "PNG")
    native = infer(live.url, name, data, "BYTES")
    assert got.keys() == native.keys()
    for key in got:
        if got[key].dtype == np.float32:
            np.testing.assert_allclose(got[key], native[key], atol=1e-5)
        else:
            assert got[key].tolist() == native[key].tolist()


def test_only_a_zoo_model_with_the_zoos_own_hooks_gets_them_in_rust(zoo: list[ZooModel]) -> None:
    from lanes.serving.server import _zoo_hooks

    cnn = next(m for m in zoo if m.name == "char_cnn")
    assert _zoo_hooks(as_class(cnn, PythonNetwork)) == ("char", list(cnn.labels))
    assert _zoo_hooks(as_class(cnn, OwnHooks)) is None


def test_a_python_network_loads_replicas_and_refuses_bad_images(python_network: Handle) -> None:
    assert python_network.server.native_models == [None] * len(ZOO_NAMES)
    assert all(r is not None for r in python_network.server.replicas[0])
    with pytest.raises(InferenceServerException) as err:
        infer(python_network.url, "char_cnn", np.array([b"hello"], dtype=object), "BYTES")
    assert err.value.status() == "400" and "not a PNG or JPEG image" in str(err.value)
