"""lanes: online inference on shared GPUs.

A host-wide shortest-job-first scheduler (the policy engine, in Rust, reached through the private
native module ``lanes._core``), the simulator that tries its policies on a model of a host
(:mod:`lanes.sim`), the inference server (:mod:`lanes.serving`, models as :class:`lanes.Model`),
and the command line (:mod:`lanes.cli`).
"""

from typing import Any

__all__ = ["Batching", "Cost", "Device", "Model", "TensorSpec"]


def __getattr__(name: str) -> Any:
    """``lanes.Model`` and friends, imported on first use (the CLI stays quick to start)."""
    if name in __all__:
        from lanes.models import base

        return getattr(base, name)
    raise AttributeError(f"module 'lanes' has no attribute {name!r}")
