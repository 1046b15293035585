"""The model repository: a folder of models, one subfolder each, read by ``lanes serve``.

Layout::

    models/
      char_cnn/
        model.toml
        model.onnx
      echo/
        model.toml
        model.py

Each subfolder that holds a ``model.toml`` is one model (others are skipped); the models come
back sorted by name. A ``model.toml``, key by key::

    name = "char_cnn"          # optional: the folder's name; letters, digits, _ . - (at most 64)
    adapter = "onnx"           # required: onnx | torch | python (lanes.models.adapters)
    file = "model.onnx"        # required: the model file, relative to the folder
    version = "1"              # optional, a string; default "1"
    devices = ["cpu", "cuda", "sim"]   # optional: device kinds it may run on; default all
    timeout_ms = 1000          # optional: default per-request deadline, > 0; default none
    weights = "weights.pt"     # torch adapter with a .py file only: a state_dict to load

    [batching]                 # optional; TF-Serving names; defaults: lanes.models.base.Batching
    max_batch_size = 16        # integer >= 0 (0: no batching)
    batch_timeout_micros = 0   # integer >= 0
    num_batch_threads = 1      # integer >= 1
    max_enqueued_batches = 64  # integer >= 1

    [cost]                     # optional prior run time, fixed_ms + per_item_ms x rows
    fixed_ms = 0.5             # number >= 0; default 1.0
    per_item_ms = 0.3          # number >= 0; default 0.0

    [[inputs]]                 # one table per input, at least one
    name = "x"
    datatype = "FP32"          # a KServe datatype: BOOL, UINT8 ... FP64, BYTES
    shape = [-1, 1, 32, 32]    # integers >= 1, or -1 for any size (first: the batch dimension)

    [[outputs]]                # one table per output, at least one
    name = "logits"
    datatype = "FP32"
    shape = [-1, 3755]

Parse, don't validate: :func:`load_repository` returns built models whose every setting is
checked, including the adapter's checks (the ``onnx`` adapter compares the declaration with the
graph). Every refusal is one line, raised as :class:`~lanes.errors.LanesError`:

- ``model_repository_invalid`` (:data:`~lanes.errors.REPOSITORY_INVALID`) for the repository and
  the ``model.toml`` format: a missing or empty repository, invalid TOML (with its line), an
  unknown key, a wrong type or value, an unknown adapter, a missing file, a duplicate name —
  ``PATH/model.toml: KEY = VALUE: what is allowed``;
- ``model_invalid`` (:data:`~lanes.models.base.MODEL_INVALID`) for a declaration the model
  contract or its adapter refuses (batching without a batch dimension, a declaration that
  disagrees with the ONNX graph, a Python file that fails to import) —
  ``PATH/model.toml: model 'NAME': ...``;
- ``missing_dependency`` for a torch model without torch installed.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from lanes.errors import REPOSITORY_INVALID, LanesError
from lanes.models.adapters import ADAPTERS, EXTRA_KEYS, adapter_class, adapter_names
from lanes.models.base import DATATYPES, Batching, Cost, Model, TensorSpec

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

__all__ = [
    "CONFIG_NAME",
    "REPOSITORY_INVALID",
    "adapter_names",
    "load_model",
    "load_repository",
]

CONFIG_NAME = "model.toml"
"""The name of a model's configuration file inside its folder."""

DEVICE_KINDS = ("cpu", "cuda", "sim")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")
_NAME_RULE = "must be 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit"
_TOP_KEYS = (
    "name", "adapter", "file", "version", "devices", "timeout_ms", "batching", "cost",
    "inputs", "outputs",
)  # fmt: skip
_ALL_EXTRA_KEYS = tuple(k for a in ADAPTERS for k in EXTRA_KEYS[a])
_BATCHING_KEYS = (
    ("max_batch_size", 0),
    ("batch_timeout_micros", 0),
    ("num_batch_threads", 1),
    ("max_enqueued_batches", 1),
)
_COST_KEYS = ("fixed_ms", "per_item_ms")
_TENSOR_KEYS = ("name", "datatype", "shape")
_SHOW_LIMIT = 60

_T = TypeVar("_T")


def load_repository(path: str | Path) -> list[Model]:
    """Read every model of the repository at ``path``, sorted by name (see the module docstring).

    Raises :class:`~lanes.errors.LanesError` when the repository is missing or holds no model,
    when any ``model.toml`` is invalid, or when two models share a name.
    """
    root = Path(path)
    if not root.exists():
        raise LanesError(REPOSITORY_INVALID, f"model repository {root}: no such folder")
    if not root.is_dir():
        raise LanesError(REPOSITORY_INVALID, f"model repository {root}: not a folder")
    folders = sorted(p for p in root.iterdir() if p.is_dir() and (p / CONFIG_NAME).is_file())
    if not folders:
        raise LanesError(
            REPOSITORY_INVALID,
            f"model repository {root}: no models: each model is a subfolder holding "
            f"{CONFIG_NAME} and its model file",
        )
    models: list[Model] = []
    seen: dict[str, Path] = {}
    for folder in folders:
        model = load_model(folder)
        config = folder / CONFIG_NAME
        if model.name in seen:
            raise LanesError(
                REPOSITORY_INVALID,
                f"model repository {root}: name = {_show(model.name)} is used by "
                f"{seen[model.name]} and {config}: model names must be unique",
            )
        seen[model.name] = config
        models.append(model)
    return sorted(models, key=lambda m: m.name)


def load_model(folder: str | Path) -> Model:
    """Read the one model in ``folder`` (its ``model.toml`` and model file)."""
    folder = Path(folder)
    config = folder / CONFIG_NAME
    source = str(config)
    try:
        data = config.read_bytes()
    except OSError as err:
        raise LanesError(
            REPOSITORY_INVALID, f"{source}: cannot read: {err.strerror or err}"
        ) from None
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise LanesError(REPOSITORY_INVALID, f"{source}: not UTF-8 text: {err}") from None
    except tomllib.TOMLDecodeError as err:
        detail = " ".join(str(err).split())
        raise LanesError(REPOSITORY_INVALID, f"{source}: invalid TOML: {detail}") from None
    return _build(_Table(raw, "", source), folder)


def _build(top: _Table, folder: Path) -> Model:
    top.only(_TOP_KEYS + _ALL_EXTRA_KEYS)
    name = top.name("name", default=folder.name)
    adapter = top.choice("adapter", ADAPTERS)
    for key in _ALL_EXTRA_KEYS:
        if top.has(key) and key not in EXTRA_KEYS[adapter]:
            users = [a for a in ADAPTERS if key in EXTRA_KEYS[a]]
            top.fail(key, f"only for the {' and '.join(users)} adapter, not {adapter}")
    file = top.file("file", folder)
    extra = {key: top.file(key, folder) for key in EXTRA_KEYS[adapter] if top.has(key)}
    kwargs: dict[str, Any] = {
        "name": name,
        "version": top.string("version", default="1"),
        "devices": top.devices("devices"),
        "timeout_ms": top.optional_number("timeout_ms", low=0, low_open=True),
        "batching": _batching(top.table("batching")),
        "inputs": _tensors(top, "inputs"),
        "outputs": _tensors(top, "outputs"),
    }
    cost = top.table("cost")
    if cost is not None:
        cost.only(_COST_KEYS)
        values = {k: cost.number(k, low=0) for k in _COST_KEYS if cost.has(k)}
        kwargs["cost"] = top.contract(lambda: Cost(**values))
    cls = adapter_class(adapter)
    return top.contract(lambda: cls(file=file, **kwargs, **extra))


def _batching(t: _Table | None) -> Batching:
    if t is None:
        return Batching()
    t.only([k for k, _ in _BATCHING_KEYS])
    return Batching(**{k: t.integer(k, low=low) for k, low in _BATCHING_KEYS if t.has(k)})


def _tensors(top: _Table, key: str) -> list[TensorSpec]:
    specs = []
    for t in top.tables(key):
        t.only(_TENSOR_KEYS)
        specs.append(
            TensorSpec(
                t.string("name", nonempty=True),
                t.choice("datatype", tuple(DATATYPES)),
                t.shape("shape"),
            )
        )
    return specs


def _show(value: object) -> str:
    """``value`` as it would be written in TOML, shortened to one short line."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
    elif isinstance(value, Mapping):
        text = "{ " + ", ".join(f"{k} = {_show(v)}" for k, v in value.items()) + " }"
    elif isinstance(value, list | tuple):
        text = "[" + ", ".join(_show(v) for v in value) + "]"
    else:
        text = str(value)
    return text if len(text) <= _SHOW_LIMIT else text[: _SHOW_LIMIT - 1] + "…"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class _Table:
    """One table of a ``model.toml``, with its dotted path for messages."""

    raw: Mapping[str, Any]
    path: str
    """Dotted path of this table, ``""`` at the top, e.g. ``inputs[1]``."""
    source: str
    """The ``model.toml`` path."""

    def key(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def fail(self, key: str, allowed: str) -> NoReturn:
        raise LanesError(
            REPOSITORY_INVALID,
            f"{self.source}: {self.key(key)} = {_show(self.raw[key])}: {allowed}",
        )

    def missing(self, key: str, needs: str) -> NoReturn:
        raise LanesError(REPOSITORY_INVALID, f"{self.source}: {self.key(key)} is missing: {needs}")

    def contract(self, build: Callable[[], _T]) -> _T:
        """Call ``build()``; a :class:`LanesError` it raises gets this file's path in front."""
        try:
            return build()
        except LanesError as err:
            raise LanesError(err.code, f"{self.source}: {err.message}") from None

    def has(self, key: str) -> bool:
        return key in self.raw

    def only(self, allowed: Sequence[str]) -> None:
        for key in self.raw:
            if key not in allowed:
                self.fail(key, f"unknown key; allowed keys here: {', '.join(allowed)}")

    def string(self, key: str, *, default: str | None = None, nonempty: bool = False) -> str:
        rule = "must be a non-empty string" if nonempty else "must be a string"
        if key not in self.raw:
            if default is None:
                self.missing(key, rule)
            return default
        value = self.raw[key]
        if not isinstance(value, str) or (nonempty and not value):
            self.fail(key, rule)
        return value

    def name(self, key: str, *, default: str) -> str:
        if key not in self.raw:
            if not _NAME.fullmatch(default):
                raise LanesError(
                    REPOSITORY_INVALID,
                    f"{self.source}: the folder name {_show(default)} is the model's name, "
                    f"which {_NAME_RULE}: rename the folder or set name",
                )
            return default
        value = self.raw[key]
        if not isinstance(value, str) or not _NAME.fullmatch(value):
            self.fail(key, _NAME_RULE)
        return value

    def choice(self, key: str, choices: Sequence[str]) -> str:
        rule = "must be one of " + ", ".join(f'"{c}"' for c in choices)
        value = self.string(key) if key in self.raw else self.missing(key, rule)
        if value not in choices:
            self.fail(key, rule)
        return value

    def file(self, key: str, folder: Path) -> Path:
        rule = f"must be the name of a file in {folder}"
        value = self.string(key, nonempty=True) if key in self.raw else self.missing(key, rule)
        path = folder / value
        if not path.is_file():
            self.fail(key, f"no such file in {folder}" if not path.exists() else rule)
        return path

    def integer(self, key: str, *, low: int) -> int:
        value = self.raw[key]
        if not _is_int(value) or value < low:
            self.fail(key, f"must be an integer >= {low}")
        return int(value)

    def number(self, key: str, *, low: float, low_open: bool = False) -> float:
        value = self.raw[key]
        ok = (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(value)
            and (value > low if low_open else value >= low)
        )
        if not ok:
            self.fail(key, f"must be a number {'>' if low_open else '>='} {low:g}")
        return float(value)

    def optional_number(self, key: str, *, low: float, low_open: bool) -> float | None:
        return self.number(key, low=low, low_open=low_open) if key in self.raw else None

    def devices(self, key: str) -> tuple[str, ...]:
        if key not in self.raw:
            return DEVICE_KINDS
        value = self.raw[key]
        rule = "must be a non-empty array of distinct device kinds from " + ", ".join(
            f'"{k}"' for k in DEVICE_KINDS
        )
        if (
            not isinstance(value, list)
            or not value
            or any(v not in DEVICE_KINDS for v in value)
            or len(set(value)) != len(value)
        ):
            self.fail(key, rule)
        return tuple(value)

    def shape(self, key: str) -> tuple[int, ...]:
        rule = "must be an array of integers, each >= 1 or -1 (any size), e.g. [-1, 3]"
        if key not in self.raw:
            self.missing(key, rule)
        value = self.raw[key]
        if not isinstance(value, list) or any(not _is_int(d) or (d < 1 and d != -1) for d in value):
            self.fail(key, rule)
        return tuple(value)

    def table(self, key: str) -> _Table | None:
        if key not in self.raw:
            return None
        value = self.raw[key]
        if not isinstance(value, Mapping):
            self.fail(key, f"must be a table: [{self.key(key)}]")
        return _Table(value, self.key(key), self.source)

    def tables(self, key: str) -> list[_Table]:
        needs = f"must be one or more [[{key}]] tables with name, datatype and shape"
        if key not in self.raw:
            self.missing(key, needs)
        value = self.raw[key]
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(v, Mapping) for v in value)
        ):
            self.fail(key, needs)
        return [_Table(v, self.key(f"{key}[{i}]"), self.source) for i, v in enumerate(value)]
