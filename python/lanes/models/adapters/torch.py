"""The ``torch`` adapter: a PyTorch model, as TorchScript or as an ``nn.Module`` built in Python.

Two forms, told apart by ``file``'s suffix:

- ``file = "model.pt"`` (any suffix but ``.py``): a TorchScript archive (``torch.jit.save``),
  loaded with ``torch.jit.load``; it holds its own weights.
- ``file = "net.py"``: a Python file defining ``build() -> torch.nn.Module``, imported when the
  repository is read (as the ``python`` adapter imports its files); with the optional key
  ``weights = "weights.pt"``, a ``state_dict`` saved by ``torch.save(net.state_dict(), path)``
  is loaded into the built module (``weights_only=True``).

The module is put in ``eval()`` mode and called as ``module(*inputs)``: one ``torch.Tensor`` per
declared input, in the order of the ``[[inputs]]`` tables (``torch.from_numpy``, moved to the
replica's device). It returns a tensor (one declared output), a tuple or list of tensors (in the
order of the ``[[outputs]]`` tables) or a dict keyed by output name; the outputs come back as
numpy arrays. ``predict`` runs under ``torch.inference_mode()``. BYTES tensors are refused (use
the ``python`` adapter for those).

Devices: ``cuda:N`` moves the module to ``cuda:N`` (refused with ``device_unavailable`` when
torch sees no such GPU); ``cpu`` and ``sim`` run on the CPU after
``torch.set_num_threads(threads)`` (``device.threads`` on ``cpu``, 1 on ``sim``). Note that
torch's intra-op thread pool is *process-wide*: the CPU replica loaded last sets the thread count
of every torch model in the process.

torch is an optional extra: without it, building a torch model raises ``LanesError`` with code
``missing_dependency`` and the message ``model 'x' uses the torch adapter: pip install
'lanes[torch]'``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from lanes.errors import DEVICE_UNAVAILABLE, MISSING_DEPENDENCY, LanesError
from lanes.models.adapters import FileModel
from lanes.models.adapters.python import import_file
from lanes.models.base import MODEL_INVALID, Arrays, Device


def import_torch(model_name: str) -> Any:
    """The ``torch`` module, or ``LanesError("missing_dependency")`` when it cannot be imported."""
    try:
        import torch  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        raise LanesError(
            MISSING_DEPENDENCY,
            f"model '{model_name}' uses the torch adapter: pip install 'lanes[torch]'",
        ) from None
    return torch


def _tensor_input(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``array`` as ``torch.from_numpy`` takes it without a warning: C-contiguous, writable."""
    array = np.ascontiguousarray(array)
    return array if array.flags.writeable else array.copy()


def torch_device(torch: Any, model: str, device: Device) -> Any:
    """The ``torch.device`` for ``device``: ``cuda:I`` (refused with ``device_unavailable`` when
    torch sees no such GPU), else the CPU with ``device.threads`` threads (1 on ``sim``;
    ``torch.set_num_threads`` is process-wide)."""
    if device.kind == "cuda":
        count = int(torch.cuda.device_count()) if torch.cuda.is_available() else 0
        if device.index >= count:
            raise LanesError(
                DEVICE_UNAVAILABLE,
                f"model '{model}' on {device.name}: torch sees {count} CUDA "
                f"device{'s' if count != 1 else ''}",
            )
        return torch.device(f"cuda:{device.index}")
    if device.kind not in ("cpu", "sim"):
        raise LanesError(DEVICE_UNAVAILABLE, f"device {device.name}: unknown device kind")
    torch.set_num_threads(1 if device.kind == "sim" else max(1, device.threads))
    return torch.device("cpu")


@dataclass
class TorchModel(FileModel):
    """A model served by PyTorch from a TorchScript file or a ``build()`` in a Python file."""

    platform: str = "pytorch_libtorch"
    weights: Path | None = field(default=None, kw_only=True)
    """A ``state_dict`` file for the module a ``.py`` file builds (``None``: its initial one)."""
    _source: ModuleType | None = field(default=None, init=False, repr=False, compare=False)
    _net: Any = field(default=None, init=False, repr=False, compare=False)
    _target: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        import_torch(self.name)
        if self.weights is not None:
            self.weights = Path(self.weights)
        for role, specs in (("input", self.inputs), ("output", self.outputs)):
            for s in specs:
                if s.datatype == "BYTES":
                    raise LanesError(
                        MODEL_INVALID,
                        f"model '{self.name}': {role} '{s.name}' is BYTES, which the torch "
                        "adapter cannot pass: use the python adapter for BYTES tensors",
                    )
        if self.file.suffix == ".py":
            source = import_file(self.name, self.file)
            if not callable(getattr(source, "build", None)):
                raise LanesError(
                    MODEL_INVALID,
                    f"model '{self.name}': {self.file.name} defines no build() function "
                    "returning a torch.nn.Module",
                )
            self._source = source
        elif self.weights is not None:
            raise LanesError(
                MODEL_INVALID,
                f"model '{self.name}': weights = {self.weights.name}: only for a .py file "
                f"with build(); the TorchScript file {self.file.name} holds its own weights",
            )
        if self.weights is not None and not self.weights.is_file():
            raise LanesError(
                MODEL_INVALID, f"model '{self.name}': weights {self.weights}: no such file"
            )

    def load(self, device: Device) -> None:
        """Load the module onto ``device`` (see the module docstring)."""
        torch = import_torch(self.name)
        target = torch_device(torch, self.name, device)
        if self._source is not None:
            net = self._source.build()
            if not isinstance(net, torch.nn.Module):
                raise LanesError(
                    MODEL_INVALID,
                    f"model '{self.name}': build() in {self.file.name} returned "
                    f"{type(net).__name__}, not a torch.nn.Module",
                )
            if self.weights is not None:
                state = torch.load(str(self.weights), map_location="cpu", weights_only=True)
                net.load_state_dict(state)
            net = net.to(target)
        else:
            net = torch.jit.load(str(self.file), map_location=target)
        net.eval()
        self._net, self._target = net, target

    def predict(self, batch: Arrays) -> Arrays:
        """Call the module on the declared inputs, in order; the declared outputs as numpy."""
        if self._net is None:
            raise self._not_loaded()
        torch = import_torch(self.name)
        with torch.inference_mode():
            args = [
                torch.from_numpy(_tensor_input(batch[s.name])).to(self._target) for s in self.inputs
            ]
            result = self._net(*args)
            return self._outputs(torch, result)

    def _outputs(self, torch: Any, result: Any) -> Arrays:
        names = [s.name for s in self.outputs]
        if isinstance(result, torch.Tensor):
            values = [result]
        elif isinstance(result, tuple | list):
            values = list(result)
        elif isinstance(result, dict):
            missing = [n for n in names if n not in result]
            if missing:
                raise LanesError(
                    MODEL_INVALID,
                    f"model '{self.name}': the module returned a dict without the declared "
                    f"output{'s' if len(missing) > 1 else ''} {', '.join(missing)}",
                )
            values = [result[n] for n in names]
        else:
            raise LanesError(
                MODEL_INVALID,
                f"model '{self.name}': the module returned {type(result).__name__}: return a "
                "tensor, a tuple of tensors or a dict of tensors by output name",
            )
        if len(values) != len(names):
            raise LanesError(
                MODEL_INVALID,
                f"model '{self.name}': the module returned {len(values)} tensors but "
                f"{len(names)} outputs are declared",
            )
        return {n: v.detach().cpu().numpy() for n, v in zip(names, values, strict=True)}
