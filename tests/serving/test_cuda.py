"""The demo zoo on CUDA devices. Skipped, with the reason, where no CUDA device is usable by ONNX
Runtime (it needs the ``onnxruntime-gpu`` build and a GPU) or, for the ``torch`` backend, by
PyTorch; run on a GPU host to check it (docs/results/gpu.md)."""

from __future__ import annotations

import numpy as np
import pytest
import tritonclient.http as http

from lanes.models.base import Device
from lanes.models.zoo import zoo_models
from lanes.serving import ServeConfig, start_in_thread
from lanes.serving.devices import cuda_count, torch_cuda_count

needs_onnx_cuda = pytest.mark.skipif(
    cuda_count() == 0,
    reason="no CUDA device usable by ONNX Runtime (needs onnxruntime-gpu and an NVIDIA GPU)",
)


@needs_onnx_cuda
def test_zoo_on_cuda_matches_cpu():
    rng = np.random.default_rng(0)
    for model in zoo_models():
        wide = 96 if "line" in model.name else 32
        raw = (rng.random((4, 32, wide)) * 255).astype(np.uint8)
        item = model.preprocess({"image": raw})
        cpu = model.replica(Device("cpu", 0, 1)).predict(item)
        gpu = model.replica(Device("cuda", 0)).predict(item)
        np.testing.assert_allclose(gpu["logits"], cpu["logits"], rtol=1e-3, atol=1e-4)


@needs_onnx_cuda
def test_serving_the_zoo_on_every_cuda_device():
    devices = ",".join(f"cuda:{i}" for i in range(cuda_count()))
    config = ServeConfig(port=0, metrics_port=None, devices=devices)
    with (
        start_in_thread(config) as h,
        http.InferenceServerClient(h.url.removeprefix("http://")) as client,
    ):
        x = http.InferInput("image", [2, 32, 32], "UINT8")
        x.set_data_from_numpy(np.zeros((2, 32, 32), np.uint8))
        assert client.infer("char_cnn", [x]).as_numpy("label").shape == (2,)


@pytest.mark.skipif(
    torch_cuda_count() == 0, reason="no CUDA device usable by PyTorch (needs torch and a GPU)"
)
def test_serving_the_torch_zoo_on_cuda():
    """The host the torch backend is for: PyTorch drives the GPU, onnxruntime may not."""
    config = ServeConfig(port=0, metrics_port=None, devices="cuda:0", zoo_backend="torch")
    with (
        start_in_thread(config) as h,
        http.InferenceServerClient(h.url.removeprefix("http://")) as client,
    ):
        x = http.InferInput("image", [2, 32, 32], "UINT8")
        x.set_data_from_numpy(np.zeros((2, 32, 32), np.uint8))
        assert client.infer("char_cnn", [x]).as_numpy("label").shape == (2,)
        line = http.InferInput("image", [1, 32, 96], "UINT8")
        line.set_data_from_numpy(np.full((1, 32, 96), 255, np.uint8))
        assert client.infer("line_rnn_en", [line]).as_numpy("text").shape == (1,)
