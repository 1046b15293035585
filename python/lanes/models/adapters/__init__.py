"""Adapters: the runtimes a model of a model repository runs on, chosen by name.

A ``model.toml`` names its adapter (``adapter = "onnx"``); :func:`adapter_class` returns the
:class:`~lanes.models.base.Model` subclass that serves it:

- ``onnx`` — :class:`~lanes.models.adapters.onnx.OnnxModel`: an ONNX file run by onnxruntime
  (CPU, or CUDA with the onnxruntime-gpu build).
- ``torch`` — :class:`~lanes.models.adapters.torch.TorchModel`: a TorchScript file, or a Python
  file whose ``build()`` returns an ``nn.Module`` (optional extra: ``pip install 'lanes[torch]'``).
- ``python`` — :class:`~lanes.models.adapters.python.PythonModel`: a Python file defining
  ``predict`` (and optionally ``load``, ``preprocess``, ``postprocess``).

Every adapter's model is a :class:`FileModel`: a model served from one file. Imports are lazy:
importing this package (or :mod:`lanes.models.repository`) imports neither onnxruntime nor torch;
each adapter imports its runtime when a model of that kind is built or loaded.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lanes.errors import LanesError
from lanes.models.base import MODEL_INVALID, Model

ADAPTERS: tuple[str, ...] = ("onnx", "torch", "python")
"""The adapter names a ``model.toml`` may use, in documentation order."""

EXTRA_KEYS: dict[str, tuple[str, ...]] = {"onnx": (), "torch": ("weights",), "python": ()}
"""``model.toml`` keys that only one adapter takes (each a path relative to the model folder)."""

_CLASSES = {
    "onnx": ("lanes.models.adapters.onnx", "OnnxModel"),
    "torch": ("lanes.models.adapters.torch", "TorchModel"),
    "python": ("lanes.models.adapters.python", "PythonModel"),
}


def adapter_names() -> tuple[str, ...]:
    """The adapter names, as ``model.toml``'s ``adapter`` key takes them."""
    return ADAPTERS


def adapter_class(name: str) -> Callable[..., Model]:
    """The model class of adapter ``name``, imported on first use.

    It is called with :class:`~lanes.models.base.Model`'s keyword arguments plus ``file`` (and
    the adapter's :data:`EXTRA_KEYS`, as paths).
    """
    if name not in _CLASSES:
        raise LanesError(
            MODEL_INVALID, f"adapter '{name}': unknown; allowed are " + ", ".join(ADAPTERS)
        )
    module, attr = _CLASSES[name]
    cls: Callable[..., Model] = getattr(importlib.import_module(module), attr)
    return cls


@dataclass
class FileModel(Model):
    """A model served from one file (``file``): the base class of the adapters' models.

    Subclasses check ``file`` when built (in ``__post_init__``), so a model that cannot be
    served is refused when the repository is read, not when the first request comes.
    """

    file: Path = field(kw_only=True)
    """The model file (an ONNX graph, a TorchScript archive or a Python file)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.file = Path(self.file)
        if not self.file.is_file():
            raise LanesError(MODEL_INVALID, f"model '{self.name}': file {self.file}: no such file")

    def _not_loaded(self) -> RuntimeError:
        return RuntimeError(f"model '{self.name}' is not loaded: call load(device) first")
