"""A model repository holding one small ONNX model, ``affine``, written to a folder: the real
repository loader and ONNX Runtime behind ``lanes serve`` in the HTTP tests (test_api,
test_openapi)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper


def write_onnx_repository(root: Path) -> Path:
    """A repository with one ONNX model, ``affine``: ``y = relu(x @ W + b)`` (FP32 [N, 4] →
    [N, 3]) and ``k = argmax(y, 1)`` (INT64 [N]). Returns the ONNX file."""
    rng = np.random.default_rng(7)
    w = helper.make_tensor("W", TensorProto.FLOAT, [4, 3], rng.normal(size=12).tolist())
    b = helper.make_tensor("b", TensorProto.FLOAT, [3], rng.normal(size=3).tolist())
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W"], ["h"]),
            helper.make_node("Add", ["h", "b"], ["a"]),
            helper.make_node("Relu", ["a"], ["y"]),
            helper.make_node("ArgMax", ["y"], ["k"], axis=1, keepdims=0),
        ],
        "affine",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3]),
            helper.make_tensor_value_info("k", TensorProto.INT64, ["N"]),
        ],
        initializer=[w, b],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    folder = root / "affine"
    folder.mkdir(parents=True)
    onnx.save(model, str(folder / "model.onnx"))
    (folder / "model.toml").write_text(
        'adapter = "onnx"\nfile = "model.onnx"\n'
        "[batching]\nmax_batch_size = 8\nbatch_timeout_micros = 50000\n"
        '[[inputs]]\nname = "x"\ndatatype = "FP32"\nshape = [-1, 4]\n'
        '[[outputs]]\nname = "y"\ndatatype = "FP32"\nshape = [-1, 3]\n'
        '[[outputs]]\nname = "k"\ndatatype = "INT64"\nshape = [-1]\n'
    )
    return folder / "model.onnx"
