"""Load-test request corpora: KServe v2 inference requests built from a directory of inputs.

:func:`kserve_requests` turns every usable file of a directory, in sorted name order, into one
``POST /v2/models/<model>[/versions/<version>]/infer`` request of the KServe v2 (Open Inference)
protocol, and :func:`write_corpus` writes the requests as a corpus file for the load engine.

Inputs
    Images (``.png``, ``.jpg``, ``.jpeg``; the magic bytes are checked) are sent undecoded as a
    one-element ``BYTES`` tensor of shape ``[1]``: the server decodes them. NumPy arrays
    (``.npy``) are sent as a typed tensor (``BOOL``, ``UINT8`` ... ``UINT64``, ``INT8`` ...
    ``INT64``, ``FP16``, ``FP32``, ``FP64``) of shape ``[1, *array.shape]`` (a batch of one), or
    the array's own shape with ``batch_dim=False``. Other files are ignored.

Wire format
    By default (``binary=True``) a request uses the binary tensor data extension: the body is a
    compact JSON inference header whose input carries ``"parameters": {"binary_data_size": N}``,
    followed at once by the N raw tensor bytes, and the HTTP header
    ``Inference-Header-Content-Length`` gives the JSON header's length in bytes. Numeric tensors
    are the array in C order, little-endian; a ``BYTES`` tensor is each element as a 4-byte
    little-endian length followed by its bytes. With ``binary=False`` the body is plain JSON with
    the values in ``"data"`` (flattened, row-major); images cannot be sent that way, as JSON
    ``BYTES`` elements are strings, not raw image bytes.

    - KServe v2 protocol: https://github.com/kserve/kserve/blob/master/docs/predict-api/v2/required_api.md
    - Binary tensor data extension (Triton): https://github.com/triton-inference-server/server/blob/main/docs/protocol/extension_binary_data.md

Corpus file
    JSON Lines, one request per line: ``{"method": "POST", "path": "/v2/models/M/infer",
    "headers": {...}, "body" | "body_b64" | "body_file": ..., "weight": 1.0}``. ``body`` is a
    UTF-8 string, ``body_b64`` standard base64 of raw bytes, ``body_file`` a path relative to the
    corpus file's directory; at most one of them. Binary requests use ``body_b64``, JSON requests
    ``body``.

Bad inputs raise ``LanesError("corpus_invalid", ...)`` naming the file; a bad model name or
version raises ``LanesError("bad_argument", ...)``.
"""

from __future__ import annotations

import base64
import json
import re
import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from lanes.errors import BAD_ARGUMENT, CORPUS_INVALID, MISSING_DEPENDENCY, LanesError
from lanes.files import write_atomic

if TYPE_CHECKING:
    import numpy.typing as npt

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
"""File name endings read as images (case-insensitive)."""
ARRAY_SUFFIXES = (".npy",)
"""File name endings read as NumPy arrays (case-insensitive)."""
BODY_KEYS = ("body", "body_b64", "body_file")
"""The keys of a corpus entry that carry its body; an entry has at most one."""

_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_JPEG_MAGIC = b"\xff\xd8"
_NPY_MAGIC = b"\x93NUMPY"
_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_JSON_IMAGES = "images need the binary tensor extension (drop --json)"

# (dtype kind, item size in bytes) -> KServe v2 datatype.
_DATATYPES = {
    ("b", 1): "BOOL",
    ("u", 1): "UINT8",
    ("u", 2): "UINT16",
    ("u", 4): "UINT32",
    ("u", 8): "UINT64",
    ("i", 1): "INT8",
    ("i", 2): "INT16",
    ("i", 4): "INT32",
    ("i", 8): "INT64",
    ("f", 2): "FP16",
    ("f", 4): "FP32",
    ("f", 8): "FP64",
}


def kserve_requests(
    model: str,
    inputs: Path,
    *,
    binary: bool = True,
    input_name: str = "INPUT",
    output_names: Sequence[str] = (),
    version: str | None = None,
    batch_dim: bool = True,
    binary_output: bool = False,
) -> list[dict[str, Any]]:
    """One KServe v2 inference request (a corpus entry) per usable file in ``inputs``.

    ``inputs`` is a directory; its images (``.png``, ``.jpg``, ``.jpeg``) and NumPy arrays
    (``.npy``) are taken in sorted name order, other files are ignored. Each request has one input
    tensor named ``input_name`` and asks for the outputs ``output_names`` (all outputs when
    empty), returned as binary data when ``binary_output`` is true. ``binary`` picks the binary
    tensor data extension (the default) or plain JSON; ``batch_dim`` prepends a batch dimension
    of 1 to an array's shape; ``version`` addresses one version of the model.

    Raises ``LanesError("bad_argument", ...)`` for a model name or version that is empty or not
    URL-safe (``[A-Za-z0-9_.-]+``) and ``LanesError("corpus_invalid", ...)`` for a missing or
    empty directory, an image with the wrong magic bytes, an unreadable array, an unsupported
    dtype, or an image with ``binary=False``.
    """
    _check_name("model name", model)
    if version is not None:
        _check_name("model version", version)
    if not input_name:
        raise LanesError(BAD_ARGUMENT, "input name: must not be empty")
    path = f"/v2/models/{model}/infer"
    if version is not None:
        path = f"/v2/models/{model}/versions/{version}/infer"
    outputs = [{"name": o, "parameters": {"binary_data": binary_output}} for o in output_names]

    if not inputs.is_dir():
        raise LanesError(CORPUS_INVALID, f"inputs {inputs}: not a directory")
    files = sorted(
        (p for p in inputs.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES + ARRAY_SUFFIXES),
        key=lambda p: p.name,
    )
    files = [p for p in files if p.is_file()]
    if not files:
        endings = ", ".join(IMAGE_SUFFIXES + ARRAY_SUFFIXES)
        raise LanesError(CORPUS_INVALID, f"inputs {inputs}: no input files ({endings})")

    entries = []
    for file in files:
        if file.suffix.lower() in IMAGE_SUFFIXES:
            if not binary:
                raise LanesError(CORPUS_INVALID, f"input {file}: {_JSON_IMAGES}")
            tensor = _image_tensor(file)
        else:
            tensor = _array_tensor(file, batch_dim)
        tensor = {"name": input_name, **tensor}
        entry = _binary_request(tensor, outputs) if binary else _json_request(file, tensor, outputs)
        entries.append({"method": "POST", "path": path, **entry, "weight": 1.0})
    return entries


def write_corpus(entries: Iterable[dict[str, Any]], path: Path) -> int:
    """Write ``entries`` to ``path`` as a JSON Lines corpus file; returns how many were written.

    The file is written atomically: if an entry is malformed (``LanesError("corpus_invalid",
    ...)``), the iterable raises, or the disk fails (``LanesError("output_failed", ...)``), no
    half-written file is left and an existing ``path`` is untouched. An entry needs a ``method``
    and a ``path`` string and has at most one of ``body``, ``body_b64`` and ``body_file``.
    """
    count = 0

    def write(f: IO[bytes]) -> None:
        nonlocal count
        for entry in entries:
            _check_entry(count + 1, entry)
            line = json.dumps(entry, separators=(",", ":"), allow_nan=False)
            f.write(line.encode("utf-8") + b"\n")
            count += 1

    write_atomic(path, write)
    return count


def _check_name(what: str, name: str) -> None:
    """Raise ``bad_argument`` unless ``name`` is a non-empty, URL-safe path segment."""
    if not _NAME.fullmatch(name):
        raise LanesError(
            BAD_ARGUMENT, f"{what} {name!r}: must be non-empty and only A-Z a-z 0-9 _ . -"
        )


def _check_entry(number: int, entry: Any) -> None:
    """Raise ``corpus_invalid`` if the ``number``-th entry breaks the corpus format."""
    if not isinstance(entry, dict):
        raise LanesError(CORPUS_INVALID, f"corpus entry {number}: not an object")
    for key in ("method", "path"):
        if not isinstance(entry.get(key), str) or not entry[key]:
            raise LanesError(CORPUS_INVALID, f"corpus entry {number}: {key!r} must be a string")
    bodies = [k for k in BODY_KEYS if k in entry]
    if len(bodies) > 1:
        raise LanesError(
            CORPUS_INVALID, f"corpus entry {number}: more than one body key ({', '.join(bodies)})"
        )


def _image_tensor(file: Path) -> dict[str, Any]:
    """A one-element ``BYTES`` tensor holding the image file's raw bytes."""
    data = _read(file)
    if file.suffix.lower() == ".png":
        magic, kind = _PNG_MAGIC, "PNG"
    else:
        magic, kind = _JPEG_MAGIC, "JPEG"
    if not data.startswith(magic):
        raise LanesError(CORPUS_INVALID, f"input {file}: not a {kind} file (bad magic bytes)")
    raw = struct.pack("<I", len(data)) + data
    return {"datatype": "BYTES", "shape": [1], "raw": raw}


def _array_tensor(file: Path, batch_dim: bool) -> dict[str, Any]:
    """A typed tensor from a ``.npy`` file: datatype, shape, raw little-endian bytes, array."""
    arr = _load_array(file)
    datatype = _DATATYPES.get((arr.dtype.kind, arr.dtype.itemsize))
    if datatype is None:
        raise LanesError(
            CORPUS_INVALID,
            f"input {file}: dtype {arr.dtype} is not supported "
            "(bool, uint8-64, int8-64, float16/32/64)",
        )
    shape = [int(n) for n in arr.shape]
    if batch_dim:
        shape = [1, *shape]
    raw = _little_endian_bytes(arr)
    return {"datatype": datatype, "shape": shape, "raw": raw, "array": arr}


def _load_array(file: Path) -> npt.NDArray[Any]:
    """The array in a ``.npy`` file, never unpickling; ``corpus_invalid`` when unreadable."""
    try:
        import numpy as np
    except ImportError as err:
        raise LanesError(MISSING_DEPENDENCY, f"input {file}: reading .npy needs numpy") from err
    with _open(file) as f:
        magic = f.read(len(_NPY_MAGIC))
    if magic != _NPY_MAGIC:
        raise LanesError(CORPUS_INVALID, f"input {file}: not a .npy file (bad magic bytes)")
    try:
        arr = np.load(file, allow_pickle=False)
    except OSError as err:
        raise LanesError(CORPUS_INVALID, f"input {file}: {err.strerror or err}") from err
    except (ValueError, EOFError) as err:
        if "allow_pickle" in str(err):
            reason = "holds Python objects (dtype object), which are never unpickled"
        else:
            first = str(err).splitlines()[0].strip("'\" ") if str(err) else type(err).__name__
            reason = f"not a readable .npy file: {first}"
        raise LanesError(CORPUS_INVALID, f"input {file}: {reason}") from err
    if not isinstance(arr, np.ndarray):  # the magic check rules out .npz
        raise LanesError(CORPUS_INVALID, f"input {file}: not a .npy array")
    return arr


def _little_endian_bytes(arr: npt.NDArray[Any]) -> bytes:
    """The array's elements in C order, little-endian."""
    import numpy as np

    little: np.dtype[Any] = arr.dtype.newbyteorder("<")
    return np.ascontiguousarray(arr, dtype=little).tobytes()


def _open(file: Path) -> IO[bytes]:
    """The file open for reading bytes; ``corpus_invalid`` when it cannot be opened."""
    try:
        return file.open("rb")
    except OSError as err:
        raise LanesError(CORPUS_INVALID, f"input {file}: {err.strerror or err}") from err


def _read(file: Path) -> bytes:
    """The file's bytes; ``corpus_invalid`` when it cannot be read."""
    try:
        return file.read_bytes()
    except OSError as err:
        raise LanesError(CORPUS_INVALID, f"input {file}: {err.strerror or err}") from err


def _binary_request(tensor: dict[str, Any], outputs: list[dict[str, Any]]) -> dict[str, Any]:
    """Headers and ``body_b64`` of a request in the binary tensor data extension."""
    raw: bytes = tensor["raw"]
    spec = {
        "name": tensor["name"],
        "datatype": tensor["datatype"],
        "shape": tensor["shape"],
        "parameters": {"binary_data_size": len(raw)},
    }
    header: dict[str, Any] = {"inputs": [spec]}
    if outputs:
        header["outputs"] = outputs
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    return {
        "headers": {
            "Content-Type": "application/octet-stream",
            "Inference-Header-Content-Length": str(len(head)),
        },
        "body_b64": base64.b64encode(head + raw).decode("ascii"),
    }


def _json_request(
    file: Path, tensor: dict[str, Any], outputs: list[dict[str, Any]]
) -> dict[str, Any]:
    """Headers and ``body`` of a plain-JSON request (numeric tensors only)."""
    arr: npt.NDArray[Any] = tensor["array"]
    spec = {
        "name": tensor["name"],
        "datatype": tensor["datatype"],
        "shape": tensor["shape"],
        "data": arr.flatten().tolist(),
    }
    body: dict[str, Any] = {"inputs": [spec]}
    if outputs:
        body["outputs"] = outputs
    try:
        text = json.dumps(body, separators=(",", ":"), allow_nan=False)
    except ValueError as err:
        raise LanesError(
            CORPUS_INVALID, f"input {file}: NaN or infinity cannot be sent as JSON (drop --json)"
        ) from err
    return {"headers": {"Content-Type": "application/json"}, "body": text}
