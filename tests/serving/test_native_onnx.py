"""An ONNX repository model runs natively in ``lanes serve`` (lanes-onnx, no Python per batch):
outputs equal Python onnxruntime's, only the declared outputs come back, warm-up runs before
ready and seeds the cost estimate, and it shares a server with a Python model (two ONNX Runtime
copies in one process: the wheel's Python module and its ``libonnxruntime``)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from onnx_repository import write_onnx_repository

from lanes.models.base import Batching, Model, TensorSpec
from lanes.models.repository import load_repository
from lanes.serving import ServeConfig, start_in_thread


class Double(Model):
    def predict(self, batch: Any) -> dict[str, np.ndarray]:
        return {"y": np.asarray(batch["x"]) * 2}


def post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(url, data=json.dumps(body).encode())
    with urllib.request.urlopen(request, timeout=10) as r:
        return dict(json.loads(r.read()))


def get(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=10) as r:
        return dict(json.loads(r.read()))


@pytest.mark.parametrize("devices", ["cpu:2", "sim:1"])
def test_an_onnx_repository_model_runs_natively_beside_a_python_model(
    tmp_path: Path, devices: str
) -> None:
    onnx_file = write_onnx_repository(tmp_path / "repo")
    # Declare one of the graph's two outputs only: the native runner answers the declared ones.
    toml = onnx_file.parent / "model.toml"
    toml.write_text(toml.read_text().split('[[outputs]]\nname = "k"')[0])
    models: list[Model] = [
        *load_repository(tmp_path / "repo"),
        Double(
            name="double",
            inputs=[TensorSpec("x", "FP32", (-1, 2))],
            outputs=[TensorSpec("y", "FP32", (-1, 2))],
            batching=Batching(max_batch_size=4),
        ),
    ]
    config = ServeConfig(port=0, metrics_port=None, grpc_port="off", devices=devices)
    with start_in_thread(config, models) as h:
        assert h.server.native_models == ["onnx", None]
        assert h.server.replicas[0] == [None] * len(h.server.devices)  # no Python replica
        warmed = {(w.model, w.device) for w in h.server.warmed}
        assert {(m.name, d.name) for m in models for d in h.server.devices} <= warmed
        x = np.random.default_rng(3).normal(size=(3, 4)).astype(np.float32)
        body = {
            "inputs": [
                {"name": "x", "shape": [3, 4], "datatype": "FP32", "data": x.ravel().tolist()}
            ]
        }
        reply = post(f"{h.url}/v2/models/affine/infer", body)
        assert [o["name"] for o in reply["outputs"]] == ["y"]
        want = ort.InferenceSession(str(onnx_file)).run(["y"], {"x": x})[0]
        got = np.asarray(reply["outputs"][0]["data"], dtype=np.float32).reshape(3, 3)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        double = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]}]}
        assert post(f"{h.url}/v2/models/double/infer", double)["outputs"][0]["data"] == [2, 4]
        stats = get(f"{h.url}/v2/models/affine/stats")["model_stats"][0]
        assert stats["execution_count"] == 1  # warm-up is not counted as serving


def test_the_zoo_takes_raw_arrays_beside_encoded_images() -> None:
    """The zoo's models declare encoded images (BYTES) and accept raw UINT8/FP32 arrays as other
    input forms: the native edge checks a request against each form before refusing it."""
    import tritonclient.http as http

    from lanes.models.zoo import zoo_models

    char_cnn = [m for m in zoo_models() if m.name == "char_cnn"]
    config = ServeConfig(port=0, metrics_port=None, grpc_port="off", devices="cpu:1")
    with (
        start_in_thread(config, char_cnn) as h,
        http.InferenceServerClient(h.url.removeprefix("http://")) as client,
    ):
        x = http.InferInput("image", [2, 32, 32], "UINT8")
        x.set_data_from_numpy(np.zeros((2, 32, 32), np.uint8))
        assert client.infer("char_cnn", [x]).as_numpy("label").shape == (2,)
        bad = {"inputs": [{"name": "image", "shape": [2], "datatype": "INT8", "data": [1, 2]}]}
        request = urllib.request.Request(
            f"{h.url}/v2/models/char_cnn/infer", data=json.dumps(bad).encode()
        )
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(request, timeout=10)
        assert err.value.code == 400
        assert "datatype INT8, expected BYTES" in json.loads(err.value.read())["error"]
