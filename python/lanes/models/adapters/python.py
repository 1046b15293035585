"""The ``python`` adapter: a model written as a plain Python file.

``file = "model.py"`` names a Python file, imported once when the repository is read (under a
unique module name, registered in ``sys.modules``; its folder is *not* put on ``sys.path``). It
defines module-level callables:

- ``predict(batch) -> outputs`` — required unless ``load`` returns one: input name → array in,
  output name → array out, every array with the batch's rows first when the model batches;
- ``load(device)`` — optional, called once per replica with its
  :class:`~lanes.models.base.Device`; if it returns a callable, that callable is the replica's
  ``predict`` (keep per-device state in it: the module itself is shared by every replica);
- ``preprocess(inputs) -> item`` and ``postprocess(output) -> outputs`` — optional, per request
  (see :mod:`lanes.models.base` for the request's life).

For example::

    import numpy as np

    def predict(batch):
        return {"y": batch["x"] * 2}

A file that fails to import (a syntax error, an exception at import time), or that defines no
``predict`` and no ``load``, is refused with ``LanesError("model_invalid", ...)`` naming the file,
the line and the exception.
"""

from __future__ import annotations

import importlib.util
import itertools
import re
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from lanes.errors import LanesError
from lanes.models.adapters import FileModel
from lanes.models.base import MODEL_INVALID, Arrays, Device

_HOOKS = ("predict", "load", "preprocess", "postprocess")
_counter = itertools.count(1)


def import_file(model_name: str, path: Path) -> ModuleType:
    """Import the Python file ``path`` as a fresh module, named after ``model_name``.

    Any exception the import raises becomes ``LanesError("model_invalid", ...)`` naming the file,
    the line (where it is in that file) and the exception.
    """
    if path.suffix != ".py":
        raise LanesError(
            MODEL_INVALID, f"model '{model_name}': file {path.name} must be a Python file (.py)"
        )
    module_name = f"lanes_model_{re.sub(r'[^A-Za-z0-9_]', '_', model_name)}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise LanesError(MODEL_INVALID, f"model '{model_name}': cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        sys.modules.pop(module_name, None)
        raise LanesError(
            MODEL_INVALID,
            f"model '{model_name}': importing {path.name} failed{_line_of(err, path)}: "
            f"{type(err).__name__}: {_one_line(err)}",
        ) from err
    return module


def _one_line(err: BaseException) -> str:
    if isinstance(err, SyntaxError) and err.msg:
        return err.msg
    return " ".join(str(err).split())


def _line_of(err: BaseException, path: Path) -> str:
    """`` at line N`` for the deepest frame of ``err`` inside ``path`` ("" when none)."""
    if isinstance(err, SyntaxError) and err.lineno:
        return f" at line {err.lineno}"
    line = None
    for frame in traceback.extract_tb(err.__traceback__):
        if Path(frame.filename) == path or Path(frame.filename).resolve() == path.resolve():
            line = frame.lineno
    return f" at line {line}" if line else ""


def _callable(model_name: str, path: Path, module: ModuleType, attr: str) -> Any:
    value = getattr(module, attr, None)
    if value is not None and not callable(value):
        raise LanesError(
            MODEL_INVALID,
            f"model '{model_name}': {path.name} defines {attr} = {type(value).__name__}, "
            "which is not callable",
        )
    return value


@dataclass
class PythonModel(FileModel):
    """A model whose steps are the functions of a Python file (see the module docstring)."""

    platform: str = "python"
    _module: ModuleType | None = field(default=None, init=False, repr=False, compare=False)
    _predict: Callable[[Any], Arrays] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        module = import_file(self.name, self.file)
        hooks = {a: _callable(self.name, self.file, module, a) for a in _HOOKS}
        if hooks["predict"] is None and hooks["load"] is None:
            raise LanesError(
                MODEL_INVALID,
                f"model '{self.name}': {self.file.name} defines no predict(batch) function "
                "(nor a load(device) that returns one)",
            )
        self._module = module

    @property
    def module(self) -> ModuleType:
        """The imported Python file (shared by every replica)."""
        assert self._module is not None
        return self._module

    def load(self, device: Device) -> None:
        """Call the file's ``load(device)``, if any; a callable it returns is this replica's
        ``predict``."""
        load = getattr(self.module, "load", None)
        replica_predict = load(device) if load is not None else None
        if replica_predict is not None:
            if not callable(replica_predict):
                raise LanesError(
                    MODEL_INVALID,
                    f"model '{self.name}': load() in {self.file.name} returned "
                    f"{type(replica_predict).__name__}: return None or a predict callable",
                )
            self._predict = replica_predict
            return
        module_predict = getattr(self.module, "predict", None)
        if module_predict is None:
            raise LanesError(
                MODEL_INVALID,
                f"model '{self.name}': load() in {self.file.name} returned None and the file "
                "defines no predict(batch) function",
            )
        self._predict = module_predict

    def preprocess(self, inputs: Arrays) -> Any:
        hook = getattr(self.module, "preprocess", None)
        return hook(inputs) if hook is not None else super().preprocess(inputs)

    def predict(self, batch: Any) -> Arrays:
        if self._predict is None:
            raise self._not_loaded()
        return self._predict(batch)

    def postprocess(self, output: Any) -> Arrays:
        hook = getattr(self.module, "postprocess", None)
        return hook(output) if hook is not None else super().postprocess(output)
