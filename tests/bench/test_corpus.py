"""``lanes.bench.corpus``: KServe v2 requests from a directory of images and arrays."""

from __future__ import annotations

import base64
import io
import json
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lanes.bench.corpus import kserve_requests, write_corpus
from lanes.errors import LanesError

JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9"


def png_2x2_gray() -> bytes:
    """A real 2x2 8-bit grayscale PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", 2, 2, 8, 0, 0, 0, 0)  # width, height, depth, gray, ...
    rows = b"\x00\x00\xff" + b"\x00\xff\x00"  # filter byte 0, then two pixels per row
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def split_binary(entry: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """The JSON inference header and the raw tensor bytes of a binary-extension request."""
    body = base64.b64decode(entry["body_b64"], validate=True)
    n = int(entry["headers"]["Inference-Header-Content-Length"])
    return json.loads(body[:n]), body[n:]


def test_binary_image_request_decodes_back(tmp_path: Path) -> None:
    png = png_2x2_gray()
    (tmp_path / "a.png").write_bytes(png)
    (tmp_path / "notes.txt").write_text("ignored")

    [entry] = kserve_requests("ocr-det", tmp_path)

    assert entry["method"] == "POST"
    assert entry["path"] == "/v2/models/ocr-det/infer"
    assert entry["weight"] == 1.0
    assert entry["headers"]["Content-Type"] == "application/octet-stream"
    assert not {"body", "body_file"} & entry.keys()
    header, raw = split_binary(entry)
    assert header == {
        "inputs": [
            {
                "name": "INPUT",
                "datatype": "BYTES",
                "shape": [1],
                "parameters": {"binary_data_size": 4 + len(png)},
            }
        ]
    }
    assert struct.unpack("<I", raw[:4]) == (len(png),)
    assert raw[4:] == png


def test_files_in_sorted_name_order_png_and_jpeg(tmp_path: Path) -> None:
    (tmp_path / "b.jpeg").write_bytes(JPEG)
    (tmp_path / "a.png").write_bytes(png_2x2_gray())
    (tmp_path / "c.JPG").write_bytes(JPEG)

    entries = kserve_requests("m", tmp_path)

    assert [split_binary(e)[1][4:] for e in entries] == [png_2x2_gray(), JPEG, JPEG]


def test_npy_float32_binary_round_trip(tmp_path: Path) -> None:
    arr = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
    np.save(tmp_path / "x.npy", arr)

    [entry] = kserve_requests("m", tmp_path, input_name="pixel_values")

    header, raw = split_binary(entry)
    [spec] = header["inputs"]
    assert spec == {
        "name": "pixel_values",
        "datatype": "FP32",
        "shape": [1, 2, 3],
        "parameters": {"binary_data_size": arr.nbytes},
    }
    assert np.array_equal(np.frombuffer(raw, dtype="<f4").reshape(2, 3), arr)


def test_big_endian_and_non_contiguous_arrays_are_sent_c_order_little_endian(
    tmp_path: Path,
) -> None:
    arr = np.arange(6, dtype=">i4").reshape(2, 3).T
    np.save(tmp_path / "x.npy", arr)

    [entry] = kserve_requests("m", tmp_path)

    header, raw = split_binary(entry)
    assert header["inputs"][0]["datatype"] == "INT32"
    assert raw == np.ascontiguousarray(arr, dtype="<i4").tobytes()


def test_json_mode_data_shape_datatype(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.array([[1, 2], [3, 4]], dtype=np.int64))
    np.save(tmp_path / "b.npy", np.array([True, False]))

    first, second = kserve_requests("m", tmp_path, binary=False)

    for entry in (first, second):
        assert entry["headers"] == {"Content-Type": "application/json"}
        assert not {"body_b64", "body_file"} & entry.keys()
        assert "Inference-Header-Content-Length" not in entry["headers"]
    assert json.loads(first["body"]) == {
        "inputs": [{"name": "INPUT", "datatype": "INT64", "shape": [1, 2, 2], "data": [1, 2, 3, 4]}]
    }
    assert '"data":[true,false]' in second["body"]
    assert json.loads(second["body"])["inputs"][0]["datatype"] == "BOOL"


def test_batch_dim_false_keeps_the_array_shape(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.zeros((3, 4), dtype=np.uint8))

    [binary] = kserve_requests("m", tmp_path, batch_dim=False)
    [plain] = kserve_requests("m", tmp_path, batch_dim=False, binary=False)

    assert split_binary(binary)[0]["inputs"][0]["shape"] == [3, 4]
    assert json.loads(plain["body"])["inputs"][0]["shape"] == [3, 4]


@pytest.mark.parametrize(
    ("dtype", "datatype"),
    [
        ("u2", "UINT16"),
        ("u4", "UINT32"),
        ("u8", "UINT64"),
        ("i1", "INT8"),
        ("i2", "INT16"),
        ("f2", "FP16"),
        ("f8", "FP64"),
    ],
)
def test_dtype_to_datatype(tmp_path: Path, dtype: str, datatype: str) -> None:
    np.save(tmp_path / "a.npy", np.ones(2, dtype=dtype))
    [entry] = kserve_requests("m", tmp_path)
    assert split_binary(entry)[0]["inputs"][0]["datatype"] == datatype


def test_version_path(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(png_2x2_gray())
    [entry] = kserve_requests("resnet_50.v2", tmp_path, version="3")
    assert entry["path"] == "/v2/models/resnet_50.v2/versions/3/infer"


def test_output_names_and_binary_output(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(png_2x2_gray())
    np.save(tmp_path / "b.npy", np.zeros(2, dtype=np.float32))
    (tmp_path / "json").mkdir()
    np.save(tmp_path / "json" / "b.npy", np.zeros(2, dtype=np.float32))

    img, arr = kserve_requests("m", tmp_path, output_names=["boxes", "scores"], binary_output=True)
    [default] = kserve_requests("m", tmp_path, output_names=["boxes"])[:1]
    [only_arr] = kserve_requests("m", tmp_path / "json", output_names=["boxes"], binary=False)

    expected = [
        {"name": "boxes", "parameters": {"binary_data": True}},
        {"name": "scores", "parameters": {"binary_data": True}},
    ]
    assert split_binary(img)[0]["outputs"] == expected
    assert split_binary(arr)[0]["outputs"] == expected
    assert split_binary(default)[0]["outputs"] == [
        {"name": "boxes", "parameters": {"binary_data": False}}
    ]
    assert json.loads(only_arr["body"])["outputs"] == [
        {"name": "boxes", "parameters": {"binary_data": False}}
    ]


def test_unsupported_dtype_error_names_file_and_dtype(tmp_path: Path) -> None:
    np.save(tmp_path / "z.npy", np.ones(2, dtype=np.complex64))
    with pytest.raises(LanesError) as info:
        kserve_requests("m", tmp_path)
    assert info.value.code == "corpus_invalid"
    assert "z.npy" in info.value.message
    assert "complex64" in info.value.message


def npy_bytes(arr: np.ndarray[Any, Any]) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=True)
    return buf.getvalue()


def npz_bytes() -> bytes:
    buf = io.BytesIO()
    np.savez(buf, a=np.ones(2))
    return buf.getvalue()


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (npy_bytes(np.array([{"a": 1}], dtype=object)), "Python objects"),
        (b"not an array at all", "bad magic bytes"),
        (npz_bytes(), "bad magic bytes"),
        (npy_bytes(np.arange(100, dtype=np.int32))[:-8], "not a readable .npy file"),
        (b"", "bad magic bytes"),
    ],
    ids=["pickled", "garbage", "npz", "truncated", "empty"],
)
def test_unreadable_npy_is_an_error_naming_the_file(
    tmp_path: Path, data: bytes, reason: str
) -> None:
    (tmp_path / "obj.npy").write_bytes(data)
    with pytest.raises(LanesError) as info:
        kserve_requests("m", tmp_path)
    assert info.value.code == "corpus_invalid"
    assert "obj.npy" in info.value.message
    assert reason in info.value.message
    assert "\n" not in info.value.message


@pytest.mark.parametrize(("name", "data"), [("bad.png", JPEG), ("bad.jpg", b"\x89PNG\r\n\x1a\n")])
def test_bad_image_magic_is_an_error_naming_the_file(
    tmp_path: Path, name: str, data: bytes
) -> None:
    (tmp_path / "a.png").write_bytes(png_2x2_gray())
    (tmp_path / name).write_bytes(data)
    with pytest.raises(LanesError) as info:
        kserve_requests("m", tmp_path)
    assert info.value.code == "corpus_invalid"
    assert name in info.value.message
    assert "\n" not in info.value.message


def test_directory_without_usable_files_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "readme.txt").write_text("no inputs here")
    (tmp_path / "sub.png").mkdir()
    with pytest.raises(LanesError) as info:
        kserve_requests("m", tmp_path)
    assert info.value.code == "corpus_invalid"
    assert str(tmp_path) in info.value.message

    with pytest.raises(LanesError) as info:
        kserve_requests("m", tmp_path / "missing")
    assert info.value.code == "corpus_invalid"


def test_images_in_json_mode_are_an_error(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(png_2x2_gray())
    with pytest.raises(LanesError) as info:
        kserve_requests("m", tmp_path, binary=False)
    assert info.value.code == "corpus_invalid"
    assert "images need the binary tensor extension (drop --json)" in info.value.message


def test_nan_in_json_mode_is_an_error(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.array([np.nan], dtype=np.float32))
    with pytest.raises(LanesError) as info:
        kserve_requests("m", tmp_path, binary=False)
    assert (info.value.code, "a.npy" in info.value.message) == ("corpus_invalid", True)


@pytest.mark.parametrize("model", ["", "a/b", "my model", "m?x=1", "é"])
def test_bad_model_name(tmp_path: Path, model: str) -> None:
    (tmp_path / "a.png").write_bytes(png_2x2_gray())
    with pytest.raises(LanesError) as info:
        kserve_requests(model, tmp_path)
    assert info.value.code == "bad_argument"


def test_bad_version(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(png_2x2_gray())
    with pytest.raises(LanesError) as info:
        kserve_requests("m", tmp_path, version="1/2")
    assert info.value.code == "bad_argument"


def test_write_corpus_writes_one_json_line_per_entry_and_no_temp_files(tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "a.png").write_bytes(png_2x2_gray())
    np.save(inputs / "b.npy", np.zeros(3, dtype=np.float32))
    entries = kserve_requests("m", inputs)
    out = tmp_path / "out"
    out.mkdir()
    corpus = out / "corpus.jsonl"

    assert write_corpus(entries, corpus) == 2

    lines = corpus.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == entries
    assert sorted(p.name for p in out.iterdir()) == ["corpus.jsonl"]


def test_write_corpus_leaves_an_existing_file_untouched_when_entries_raise(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("old\n")

    def entries() -> Iterator[dict[str, Any]]:
        yield {"method": "POST", "path": "/v2/models/m/infer", "body": "{}", "weight": 1.0}
        raise LanesError("corpus_invalid", "input x.npy: broken")

    with pytest.raises(LanesError, match=r"x\.npy"):
        write_corpus(entries(), corpus)

    assert corpus.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.jsonl"]


def test_write_corpus_rejects_an_entry_with_two_bodies(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    entry = {"method": "POST", "path": "/x", "body": "{}", "body_b64": "e30=", "weight": 1.0}
    with pytest.raises(LanesError) as info:
        write_corpus([entry], corpus)
    assert info.value.code == "corpus_invalid"
    assert not corpus.exists()
    assert list(tmp_path.iterdir()) == []
