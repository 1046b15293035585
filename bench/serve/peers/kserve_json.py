"""KServe v2 JSON tensors for the peer servers (LitServe, Ray Serve) of the serving race.

lanes speaks the KServe v2 / Open Inference Protocol natively; the peers are taught the same
JSON body here, so all three servers receive byte-identical requests and return the same
response shape:

    request   {"inputs": [{"name": "x", "shape": [1, ...], "datatype": "FP32", "data": [...]}]}
    response  {"model_name": M, "outputs": [{"name": "y", "shape": [...], "datatype": "FP32",
                                             "data": [...]}]}

Only one FP32 input (and FP32 or INT64 outputs) is supported: the benchmark needs nothing else,
and a request that differs is refused with a message naming what was received and what is
allowed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]


class BadRequest(ValueError):
    """A request body that is not the one-FP32-input KServe v2 JSON the peers accept."""


def decode(body: dict[str, Any], input_name: str) -> FloatArray:
    """The ``[1, ...]`` FP32 array of the request's one input named ``input_name``."""
    inputs = body.get("inputs")
    if not isinstance(inputs, list) or len(inputs) != 1:
        raise BadRequest(f"'inputs': expected a list of one tensor, got {inputs!r:.80}")
    tensor = inputs[0]
    if tensor.get("name") != input_name or tensor.get("datatype") != "FP32":
        raise BadRequest(
            f"input {tensor.get('name')!r} {tensor.get('datatype')!r}: "
            f"expected {input_name!r} 'FP32'"
        )
    shape = [int(d) for d in tensor["shape"]]
    array = np.asarray(tensor["data"], dtype=np.float32)
    if array.size != int(np.prod(shape)):
        raise BadRequest(f"input {input_name!r}: {array.size} values for shape {shape}")
    return array.reshape(shape)


DATATYPES = {"float32": "FP32", "int64": "INT64"}
"""The output datatypes the race's models produce (``char_cnn_top1``'s class is INT64)."""


def encode(model_name: str, output_name: str, array: npt.NDArray[Any]) -> dict[str, Any]:
    """The KServe v2 JSON response holding ``array`` as output ``output_name``."""
    return {
        "model_name": model_name,
        "outputs": [
            {
                "name": output_name,
                "shape": list(array.shape),
                "datatype": DATATYPES[str(array.dtype)],
                "data": array.ravel().tolist(),
            }
        ],
    }
