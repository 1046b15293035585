"""Models for ``lanes serve``: the model contract (:mod:`lanes.models.base`), the model
repository and its adapters (``onnx``, ``torch``, ``python``), and the built-in demo zoo."""

from lanes.models.base import Batching, Cost, Device, Model, TensorSpec

__all__ = ["Batching", "Cost", "Device", "Model", "TensorSpec"]
