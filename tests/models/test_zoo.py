"""The demo zoo: deterministic generation and caching, the ONNX graphs, pre- and post-processing
on images and raw arrays, bad inputs, export as a model repository, CTC decoding, batching."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from PIL import Image

from lanes.errors import LanesError
from lanes.models.base import Device, datatype_of
from lanes.models.images import sample_images
from lanes.models.imaging import (
    W_FIXED,
    ctc_greedy,
    decode_gray,
    ink,
    resize_char,
    resize_line,
    softmax,
)
from lanes.models.zoo import (
    OPSET,
    ZOO_NAMES,
    ZOO_VERSION,
    OnnxZooModel,
    default_cache_dir,
    export,
    onnx_path,
    onnx_session,
    spec,
    zoo_model,
    zoo_models,
)

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

CPU = Device("cpu", 0, 1)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One zoo cache for the module: every model generated once."""
    root = tmp_path_factory.mktemp("zoo-cache")
    for name in ZOO_NAMES:
        onnx_path(name, root)
    return root


@pytest.fixture(scope="module")
def loaded(cache: Path) -> dict[str, OnnxZooModel]:
    """Every zoo model, loaded on one CPU thread."""
    return {m.name: m.replica(CPU) for m in zoo_models(cache_dir=cache)}


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[bytes]]:
    """Encoded sample images by kind (``char``, ``line``), three of each."""
    paths = sample_images(tmp_path_factory.mktemp("images"), count_per_model=3)
    return {
        kind: [p.read_bytes() for p in paths if p.parent.name == kind] for kind in ("char", "line")
    }


def kind_of(name: str) -> str:
    return spec(name).task


def as_bytes_tensor(items: list[bytes]) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def png(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format="PNG")
    return buffer.getvalue()


# -- generation and caching -----------------------------------------------------------------------


def test_generation_is_deterministic_and_cached_under_the_version(tmp_path: Path, cache: Path):
    for name in ZOO_NAMES:
        path = onnx_path(name, tmp_path)
        assert path == tmp_path / ZOO_VERSION / f"{name}.onnx"
        assert path.read_bytes() == onnx_path(name, cache).read_bytes()
    # No temporary files are left beside the models.
    assert sorted(os.listdir(tmp_path / ZOO_VERSION)) == sorted(f"{n}.onnx" for n in ZOO_NAMES)


def test_a_cached_file_is_reused_not_regenerated(tmp_path: Path):
    path = onnx_path("misc_cls", tmp_path)
    path.write_bytes(b"sentinel")
    assert onnx_path("misc_cls", tmp_path).read_bytes() == b"sentinel"


def test_default_cache_dir_follows_lanes_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("LANES_CACHE", str(tmp_path))
    assert default_cache_dir() == tmp_path / "zoo"
    assert onnx_path("misc_cls") == tmp_path / "zoo" / ZOO_VERSION / "misc_cls.onnx"
    monkeypatch.delenv("LANES_CACHE")
    assert default_cache_dir() == Path.home() / ".cache" / "lanes" / "zoo"


def test_an_unknown_model_name_is_refused(tmp_path: Path):
    with pytest.raises(LanesError) as info:
        zoo_models(["char_cnn", "nope"], cache_dir=tmp_path)
    assert info.value.code == "bad_argument"
    assert "'nope'" in info.value.message and "char_cnn" in info.value.message


@pytest.mark.parametrize("name", ZOO_NAMES)
def test_graphs_pass_the_checker_with_a_symbolic_batch(cache: Path, name: str):
    model = onnx.load(onnx_path(name, cache))
    onnx.checker.check_model(model, full_check=True)
    assert [(o.domain, o.version) for o in model.opset_import] == [("", OPSET)]
    for value in (*model.graph.input, *model.graph.output):
        assert value.type.tensor_type.shape.dim[0].dim_param == "batch"
    (x,) = model.graph.input
    (y,) = model.graph.output
    assert (x.name, y.name) == ("x", "logits")
    classes = y.type.tensor_type.shape.dim[-1].dim_value
    assert classes == len(spec(name).labels)
    assert {"char_cnn": 3755, "line_rnn_zh": 6001, "line_rnn_en": 96, "misc_cls": 4}[
        name
    ] == classes


# -- serving --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ZOO_NAMES)
def test_predict_equals_a_direct_onnxruntime_run(
    cache: Path, loaded: dict[str, OnnxZooModel], name: str
):
    x = np.random.default_rng(1).random((3, *spec(name).input_shape), dtype=np.float32)
    direct = ort.InferenceSession(str(onnx_path(name, cache)), providers=["CPUExecutionProvider"])
    (expected,) = direct.run(["logits"], {"x": x})
    got = loaded[name].predict({"x": x})
    assert list(got) == ["logits"]
    np.testing.assert_allclose(got["logits"], expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ZOO_NAMES)
def test_sample_pngs_round_trip_to_declared_outputs(
    loaded: dict[str, OnnxZooModel], images: dict[str, list[bytes]], name: str
):
    model = loaded[name]
    data = images[kind_of(name)]
    item = model.preprocess({"image": as_bytes_tensor(data)})
    assert item["x"].shape == (len(data), *spec(name).input_shape)
    assert item["x"].dtype == np.float32
    out = model.postprocess(model.predict(item))
    assert [s.name for s in model.outputs] == list(out)
    for s in model.outputs:
        assert datatype_of(out[s.name]) == s.datatype
        assert out[s.name].shape == (len(data),)
    if kind_of(name) == "char":
        assert all(label in spec(name).labels for label in out["label"])
        assert np.all((out["score"] > 0) & (out["score"] <= 1))
        assert [spec(name).labels[c] for c in out["class"]] == list(out["label"])
    else:
        assert all(isinstance(t, str) for t in out["text"])
        assert all(set(t) <= set(spec(name).labels[1:]) for t in out["text"])


def test_declared_inputs_are_one_bytes_image(loaded: dict[str, OnnxZooModel]):
    for model in loaded.values():
        assert [s.metadata() for s in model.inputs] == [
            {"name": "image", "datatype": "BYTES", "shape": [-1]}
        ]
        assert model.batching.max_batch_size == (16 if kind_of(model.name) == "char" else 8)


def test_raw_uint8_and_fp32_arrays_match_the_png_path(loaded: dict[str, OnnxZooModel]):
    rng = np.random.default_rng(2)
    gray = rng.integers(0, 256, size=(2, 40, 90), dtype=np.uint8)
    gray[:, :2] = 255  # a light border: dark-on-light polarity
    for name in ("char_cnn", "line_rnn_en"):
        model = loaded[name]
        from_png = model.preprocess({"image": as_bytes_tensor([png(g) for g in gray])})["x"]
        from_u8 = model.preprocess({"image": gray})["x"]
        from_f32 = model.preprocess({"image": (gray / 255).astype(np.float32)[:, None]})["x"]
        np.testing.assert_array_equal(from_u8, from_png)
        np.testing.assert_allclose(from_f32, from_u8, atol=1e-5)
        assert model.postprocess(model.predict({"x": from_u8}))


def test_an_array_already_at_model_size_passes_through_unresized(loaded: dict[str, OnnxZooModel]):
    x = np.zeros((1, 1, 32, W_FIXED), dtype=np.float32)
    x[0, 0, 8:24, 10:100] = 0.75  # light strokes on a dark (0) background: kept as ink
    np.testing.assert_array_equal(loaded["line_rnn_zh"].preprocess({"image": x})["x"], x)


def truncated_png() -> bytes:
    data = png(np.full((20, 20), 200, dtype=np.uint8))
    return data[: len(data) // 2]


@pytest.mark.parametrize(
    ("image", "words"),
    [
        (as_bytes_tensor([b"\x89PNG\r\n\x1a\nnot really a png"]), "image'[0]"),
        (as_bytes_tensor([b"hello"]), "not a format Pillow can read"),
        (as_bytes_tensor([b""]), "empty"),
        (as_bytes_tensor([png(np.zeros((4, 4), np.uint8)), truncated_png()]), "image'[1]"),
        (np.array(["a text"], dtype=object), "text, not encoded image bytes"),
        (as_bytes_tensor([]), "BYTES shape [0]"),
        (np.zeros((1, 32, 32), dtype=np.int32), "dtype int32"),
        (np.zeros((1, 3, 32, 32), dtype=np.uint8), "shape [1, 3, 32, 32]"),
        (np.zeros((32, 32), dtype=np.uint8), "shape [32, 32]"),
    ],
)
def test_bad_inputs_raise_bad_input(loaded: dict[str, OnnxZooModel], image: Any, words: str):
    with pytest.raises(LanesError) as info:
        loaded["char_cnn"].preprocess({"image": image})
    assert info.value.code == "bad_input"
    assert words in info.value.message


def test_a_missing_image_input_is_named(loaded: dict[str, OnnxZooModel]):
    with pytest.raises(LanesError) as info:
        loaded["misc_cls"].preprocess({"pixels": np.zeros((1, 32, 32), np.uint8)})
    assert info.value.code == "bad_input"
    assert "'image'" in info.value.message and "'pixels'" in info.value.message


def test_collate_then_split_equals_running_each_request_alone(
    loaded: dict[str, OnnxZooModel], images: dict[str, list[bytes]]
):
    for name in ("char_cnn", "line_rnn_zh"):
        model = loaded[name]
        data = images[kind_of(name)]
        requests = [as_bytes_tensor(data[:1]), as_bytes_tensor(data[1:3])]
        items = [model.preprocess({"image": r}) for r in requests]
        alone = [model.predict(item) for item in items]
        batch = model.collate(items)
        parts = model.split(model.predict(batch), [model.rows({"image": r}) for r in requests])
        for part, single in zip(parts, alone, strict=True):
            np.testing.assert_allclose(part["logits"], single["logits"], rtol=1e-4, atol=1e-4)
            got, want = model.postprocess(part), model.postprocess(single)
            assert got.keys() == want.keys()
            for key in ("label", "class", "text"):
                if key in got:
                    assert list(got[key]) == list(want[key])


def test_session_options_and_devices(cache: Path):
    path = onnx_path("misc_cls", cache)
    session = onnx_session(path, Device("sim", 3, threads=8))
    assert session.get_providers() == ["CPUExecutionProvider"]
    assert session.get_session_options().intra_op_num_threads == 1
    session = onnx_session(path, Device("cpu", 0, threads=2))
    options = session.get_session_options()
    assert (options.intra_op_num_threads, options.inter_op_num_threads) == (2, 1)
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        with pytest.raises(LanesError) as info:
            onnx_session(path, Device("cuda", 0))
        assert info.value.code == "device_unavailable"
        assert "cuda:0" in info.value.message


def test_predict_before_load_says_so(cache: Path):
    with pytest.raises(RuntimeError, match="not loaded"):
        zoo_model("misc_cls", cache).predict({"x": np.zeros((1, 1, 32, 32), np.float32)})


# -- export ---------------------------------------------------------------------------------------


def test_export_writes_a_repository_matching_the_onnx_graphs(tmp_path: Path, cache: Path):
    folders = export(tmp_path / "repo", cache_dir=cache)
    assert folders == [tmp_path / "repo" / n for n in ZOO_NAMES]
    for folder in folders:
        assert sorted(os.listdir(folder)) == ["model.onnx", "model.toml"]
        toml = tomllib.loads((folder / "model.toml").read_text())
        s = spec(folder.name)
        assert toml["name"] == folder.name
        assert (toml["adapter"], toml["file"], toml["version"]) == ("onnx", "model.onnx", "1")
        assert toml["devices"] == ["cpu", "cuda", "sim"]
        assert toml["timeout_ms"] == 1000
        assert toml["batching"] == {
            "max_batch_size": s.max_batch_size,
            "batch_timeout_micros": 0,
            "num_batch_threads": 1,
            "max_enqueued_batches": 64,
        }
        assert toml["cost"] == {"fixed_ms": s.cost.fixed_ms, "per_item_ms": s.cost.per_item_ms}
        data = (folder / "model.onnx").read_bytes()
        assert data == onnx_path(folder.name, cache).read_bytes()
        graph = onnx.load_from_string(data).graph
        for table, values in (("inputs", graph.input), ("outputs", graph.output)):
            declared = [
                {
                    "name": v.name,
                    "datatype": "FP32",
                    "shape": [d.dim_value or -1 for d in v.type.tensor_type.shape.dim],
                }
                for v in values
            ]
            assert toml[table] == declared


# -- imaging --------------------------------------------------------------------------------------


def test_ctc_greedy_collapses_repeats_then_drops_blanks():
    charset = ["", "a", "b"]
    paths = [[1, 1, 0, 1, 2, 2], [0, 0, 0, 0, 0, 0], [2, 0, 2, 1, 0, 0]]
    logits = np.full((3, 6, 3), -5.0, dtype=np.float32)
    for n, path in enumerate(paths):
        logits[n, np.arange(6), path] = 5.0
    assert ctc_greedy(logits, charset) == ["aab", "", "bba"]
    assert ctc_greedy(logits[0], charset) == ["aab"]
    # Another blank index: class 2 is blank, class 0 a symbol.
    assert ctc_greedy(logits[0], ["x", "a", ""], blank=2) == ["axa"]
    with pytest.raises(ValueError, match="2 symbols for 3 classes"):
        ctc_greedy(logits, ["", "a"])


def test_softmax_is_stable_and_normalised():
    p = softmax(np.array([[1000.0, 1000.0, -1000.0], [0.0, 0.0, 0.0]]))
    np.testing.assert_allclose(p, [[0.5, 0.5, 0.0], [1 / 3, 1 / 3, 1 / 3]], atol=1e-6)
    assert p.dtype == np.float32


def test_ink_is_polarity_free():
    dark_on_light = np.full((10, 20), 255, np.uint8)
    dark_on_light[3:7, 5:15] = 0
    light_on_dark = 255 - dark_on_light
    np.testing.assert_array_equal(ink(dark_on_light), ink(light_on_dark))
    assert ink(dark_on_light)[5, 10] == 1.0 and ink(dark_on_light)[0, 0] == 0.0


def test_resize_line_pads_short_lines_and_squeezes_long_ones():
    short = np.zeros((16, 40), np.uint8)  # height 16 → 32: 80 columns, then padding
    short[4:12, :] = 255
    x = resize_line(short)
    assert x.shape == (1, 32, W_FIXED)
    assert x[0, :, :80].max() > 0.9 and not x[0, :, 80:].any()
    long = np.full((32, 1000), 255, np.uint8)
    long[10:20, :] = 0
    y = resize_line(long)
    assert y.shape == (1, 32, W_FIXED)
    assert y[0, 15, -1] > 0.9  # the line fills the whole width


def test_resize_char_keeps_the_aspect_ratio_centred():
    tall = np.zeros((64, 16), np.uint8)
    tall[:, 4:12] = 255
    x = resize_char(tall)
    assert x.shape == (1, 32, 32)
    # 64x16 → 32x8, centred: columns 12..19 hold the glyph, the rest is background.
    assert x[0, :, 12:20].any() and not x[0, :, :12].any() and not x[0, :, 20:].any()


def test_sample_images_are_deterministic_and_named_by_kind(tmp_path: Path):
    a = sample_images(tmp_path / "a", count_per_model=2, seed=7)
    b = sample_images(tmp_path / "b", count_per_model=2, seed=7)
    assert [p.relative_to(tmp_path / "a") for p in a] == [
        Path("char/char_000.png"),
        Path("char/char_001.png"),
        Path("line/line_000.png"),
        Path("line/line_001.png"),
    ]
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]
    for p in a:
        with Image.open(p) as img:
            if p.parent.name == "line":
                assert img.height == 32 and 60 <= img.width <= 300
            else:
                assert 28 <= img.width <= 40 and 28 <= img.height <= 40


def test_an_oversized_image_is_refused_before_decoding():
    buffer = io.BytesIO()
    Image.new("1", (5000, 4000)).save(buffer, format="PNG")  # 20 M pixels, a few kB
    with pytest.raises(LanesError) as info:
        decode_gray(buffer.getvalue())
    assert info.value.code == "bad_input"
    assert "5000x4000: too large" in info.value.message
