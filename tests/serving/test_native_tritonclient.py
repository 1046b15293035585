"""The Rust data plane (crates/lanes-server, issue 14) driven by tritonclient unchanged: the
example server ``serve_onnx`` on loopback, a real ONNX model (``affine``), REST and gRPC, sync
and asyncio. The binary is built by ``cargo build -p lanes-server --example serve_onnx`` (a
no-op after ``cargo test --workspace``, which builds examples); it loads ONNX Runtime from
``ORT_DYLIB_PATH``, else the wheel in this venv."""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as grpcaio
import tritonclient.http as httpclient
from tests.serving.onnx_repository import write_onnx_repository
from tritonclient.utils import InferenceServerException

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def binary() -> Path:
    cargo = shutil.which("cargo")
    assert cargo, "cargo is needed to build the native server (make setup installs nothing else)"
    subprocess.run(
        [cargo, "build", "--quiet", "-p", "lanes-server", "--example", "serve_onnx"],
        cwd=ROOT,
        check=True,
    )
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "debug" / "examples" / "serve_onnx"


def ort_library() -> str:
    found = glob.glob(os.path.join(os.path.dirname(ort.__file__), "capi", "libonnxruntime.so*"))
    return os.environ.get("ORT_DYLIB_PATH") or sorted(found)[-1]


@pytest.fixture(scope="module")
def native(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    model = write_onnx_repository(tmp_path_factory.mktemp("repo"))
    rest, grpc = free_port(), free_port()
    proc = subprocess.Popen(
        [
            str(binary()),
            "--port",
            str(rest),
            "--grpc-port",
            str(grpc),
            "--policy",
            "sjf",
            f"affine={model}:4",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "ORT_DYLIB_PATH": ort_library()},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # printed once both listeners are bound
        assert line.startswith("listening on "), line + proc.stdout.read()
        yield f"127.0.0.1:{rest}", f"127.0.0.1:{grpc}", model
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def expected(model: Path, x: np.ndarray) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    y, k = session.run(["y", "k"], {"x": x})
    return {"y": y, "k": k}


X = np.arange(8, dtype=np.float32).reshape(2, 4) / 4


def test_grpc_sync_client(native: tuple[str, str, Path]) -> None:
    _, grpc, model = native
    client = grpcclient.InferenceServerClient(grpc)
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("affine")
    meta = client.get_model_metadata("affine", as_json=True)
    assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": ["-1", "4"]}]
    x = grpcclient.InferInput("x", list(X.shape), "FP32")
    x.set_data_from_numpy(X)
    result = client.infer("affine", [x], request_id="r1", client_timeout=10.0)
    want = expected(model, X)
    np.testing.assert_allclose(result.as_numpy("y"), want["y"], rtol=1e-6)
    np.testing.assert_array_equal(result.as_numpy("k"), want["k"])
    assert result.get_response().id == "r1"
    with pytest.raises(InferenceServerException) as err:
        client.infer("nope", [x])
    assert err.value.status() == "StatusCode.NOT_FOUND"
    assert err.value.message() == "unknown model 'nope'; this server has: affine"


def test_grpc_asyncio_client(native: tuple[str, str, Path]) -> None:
    _, grpc, model = native

    async def many() -> list[np.ndarray]:
        client = grpcaio.InferenceServerClient(grpc)
        try:
            x = grpcaio.InferInput("x", list(X.shape), "FP32")
            x.set_data_from_numpy(X)
            results = await asyncio.gather(*(client.infer("affine", [x]) for _ in range(40)))
            return [r.as_numpy("y") for r in results]
        finally:
            await client.close()

    want = expected(model, X)["y"]
    for y in asyncio.run(many()):
        np.testing.assert_allclose(y, want, rtol=1e-6)


@pytest.mark.parametrize("binary_data", [True, False])
def test_http_client(native: tuple[str, str, Path], binary_data: bool) -> None:
    rest, _, model = native
    x = httpclient.InferInput("x", list(X.shape), "FP32")
    x.set_data_from_numpy(X, binary_data=binary_data)
    out = [httpclient.InferRequestedOutput("y", binary_data=binary_data)]
    bad = httpclient.InferInput("x", list(X.shape), "FP64")
    bad.set_data_from_numpy(X.astype(np.float64), binary_data=binary_data)
    with httpclient.InferenceServerClient(rest) as client:
        result = client.infer("affine", [x], outputs=out)
        with pytest.raises(InferenceServerException) as err:
            client.infer("affine", [bad])
    np.testing.assert_allclose(result.as_numpy("y"), expected(model, X)["y"], rtol=1e-6)
    assert err.value.status() == "400"
    assert err.value.message() == "input 'x': datatype FP64, expected FP32"
