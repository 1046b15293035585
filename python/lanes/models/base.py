"""The model contract: what ``lanes serve`` needs from a model, and the devices it runs on.

A :class:`Model` is one servable model. The server makes one *replica* per eligible device (a
shallow :func:`copy.copy` of the model) and calls :meth:`Model.load` on each, so a replica's
``predict`` runs on exactly one device. A request's life through a model:

1. ``preprocess(inputs) -> item`` — per request, on the CPU pool. ``inputs`` maps input names to
   numpy arrays as decoded from the wire (BYTES tensors arrive as ``dtype=object`` arrays of
   ``bytes``). With batching on (``max_batch_size > 0``) every array has a leading batch dimension
   ``n >= 1`` and the item must keep it: an item is a dict of arrays whose first dimension is ``n``.
2. ``collate(items) -> batch`` — the server joins the items of one batch (default: concatenate
   every key along axis 0).
3. ``predict(batch) -> outputs`` — per batch, on the replica's device. Outputs map names to arrays
   whose first dimension is the batch's total row count.
4. ``split(outputs, rows) -> list`` — the server cuts the outputs back into per-request parts
   (default: slice every key along axis 0 by each request's row count).
5. ``postprocess(output) -> outputs`` — per request, on the CPU pool; returns a dict of arrays
   that become the response's output tensors (``dtype=object`` arrays of ``str``/``bytes`` become
   BYTES tensors).

Before the server reports ready, each replica is warmed up with batches built from
``sample()`` (one pre-processed item; the default is made from zeros of the declared inputs).

With batching off (``max_batch_size == 0``) each request is its own batch: ``collate`` gets one
item and the arrays pass through unchanged.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from lanes.errors import LanesError

Arrays = dict[str, npt.NDArray[Any]]
"""Named tensors: input name or output name → array."""

MODEL_INVALID = "model_invalid"
"""A model whose declaration breaks a rule (names, dtypes, shapes, batching settings)."""
NO_SAMPLE = "no_sample"
"""A model that cannot make a warm-up sample (a BYTES input and no ``sample`` override)."""

# KServe v2 datatypes and their numpy types (BYTES is an object array of bytes).
DATATYPES: dict[str, Any] = {
    "BOOL": np.bool_,
    "UINT8": np.uint8,
    "UINT16": np.uint16,
    "UINT32": np.uint32,
    "UINT64": np.uint64,
    "INT8": np.int8,
    "INT16": np.int16,
    "INT32": np.int32,
    "INT64": np.int64,
    "FP16": np.float16,
    "FP32": np.float32,
    "FP64": np.float64,
    "BYTES": np.object_,
}


def datatype_of(array: npt.NDArray[Any]) -> str:
    """The KServe datatype name of ``array``'s dtype (object and str arrays are BYTES)."""
    if array.dtype.kind in "OSU":
        return "BYTES"
    for name, np_type in DATATYPES.items():
        if name != "BYTES" and array.dtype == np.dtype(np_type):
            return name
    raise LanesError(MODEL_INVALID, f"dtype {array.dtype} has no KServe datatype")


@dataclass(frozen=True)
class TensorSpec:
    """A declared input or output: name, KServe datatype and shape.

    ``shape`` includes the batch dimension first when the model batches; ``-1`` marks a dimension
    of any size.
    """

    name: str
    datatype: str
    shape: tuple[int, ...]

    def __post_init__(self) -> None:
        if self.datatype not in DATATYPES:
            raise LanesError(
                MODEL_INVALID,
                f"tensor '{self.name}': datatype '{self.datatype}': allowed are "
                + ", ".join(DATATYPES),
            )
        if any(d < -1 or d == 0 for d in self.shape):
            raise LanesError(
                MODEL_INVALID,
                f"tensor '{self.name}': shape {list(self.shape)}: dimensions must be >= 1 or -1",
            )

    def metadata(self) -> dict[str, Any]:
        """The KServe model-metadata form: ``{"name", "datatype", "shape"}``."""
        return {"name": self.name, "datatype": self.datatype, "shape": list(self.shape)}


@dataclass(frozen=True)
class Batching:
    """Dynamic batching settings, with TF-Serving's names.

    - ``max_batch_size``: most rows in one batch; 0 turns batching off.
    - ``batch_timeout_micros``: how long a partial batch may wait for company while a device is
      free; 0 (the default) is eager: an idle device takes whatever is queued.
    - ``num_batch_threads``: batches of this model in flight at once, across devices.
    - ``max_enqueued_batches``: the queue bound, in batches of ``max_batch_size`` rows (requests
      when batching is off); past it requests are refused with 429.
    """

    max_batch_size: int = 0
    batch_timeout_micros: int = 0
    num_batch_threads: int = 1
    max_enqueued_batches: int = 64

    def __post_init__(self) -> None:
        for key in ("max_batch_size", "batch_timeout_micros"):
            if getattr(self, key) < 0:
                raise LanesError(MODEL_INVALID, f"{key} = {getattr(self, key)}: must be >= 0")
        for key in ("num_batch_threads", "max_enqueued_batches"):
            if getattr(self, key) < 1:
                raise LanesError(MODEL_INVALID, f"{key} = {getattr(self, key)}: must be >= 1")

    @property
    def queue_rows(self) -> int:
        """The queue bound in rows (requests when batching is off)."""
        return self.max_enqueued_batches * max(1, self.max_batch_size)


@dataclass(frozen=True)
class Device:
    """One device a replica runs on.

    ``kind`` is ``cpu``, ``cuda`` or ``sim``; ``index`` numbers devices of a kind; ``threads`` is
    the intra-op thread count a runtime on this device must use (CPU executors; 1 elsewhere).
    ``sim`` devices are simulated GPUs: the server holds each batch for the model's modelled run
    time, and the replica computes outputs on the CPU.
    """

    kind: str
    index: int = 0
    threads: int = 1

    @property
    def name(self) -> str:
        """``cpu:0``, ``cuda:1``, ``sim:3``."""
        return f"{self.kind}:{self.index}"

    @property
    def simulated(self) -> bool:
        return self.kind == "sim"


@dataclass(frozen=True)
class Cost:
    """A model's prior run-time curve, ``fixed_ms + per_item_ms * rows`` milliseconds.

    It seeds the scheduler's online estimates, and on ``sim`` devices it *is* the modelled run
    time of a batch.
    """

    fixed_ms: float = 1.0
    per_item_ms: float = 0.0

    def __post_init__(self) -> None:
        if self.fixed_ms < 0 or self.per_item_ms < 0 or self.fixed_ms + self.per_item_ms <= 0:
            raise LanesError(
                MODEL_INVALID,
                f"cost fixed_ms = {self.fixed_ms}, per_item_ms = {self.per_item_ms}: "
                "must be >= 0 and not both 0",
            )

    def ms(self, rows: int) -> float:
        return self.fixed_ms + self.per_item_ms * rows


@dataclass
class Model:
    """A servable model. Subclass it and override ``load`` and ``predict`` (and, where the wire
    form differs from the model's, ``preprocess`` and ``postprocess``).

    ``devices`` lists the device kinds a model may run on (``cpu``, ``cuda``, ``sim``); the server
    places a replica on every device of those kinds. ``timeout_ms`` is the default per-request
    deadline (``None``: none).
    """

    name: str
    inputs: Sequence[TensorSpec]
    outputs: Sequence[TensorSpec]
    batching: Batching = field(default_factory=Batching)
    version: str = "1"
    platform: str = "python"
    timeout_ms: float | None = None
    devices: Sequence[str] = ("cpu", "cuda", "sim")
    cost: Cost = field(default_factory=Cost)
    input_forms: Sequence[Sequence[TensorSpec]] = ()
    """Other accepted forms of the inputs (e.g. raw arrays beside encoded images): a request
    that fails the declared ``inputs`` is accepted if it matches one of these."""

    def __post_init__(self) -> None:
        validate(self)

    # -- the four steps -------------------------------------------------------------------------

    def load(self, device: Device) -> None:
        """Load weights onto ``device`` (called once per replica, before serving)."""

    def preprocess(self, inputs: Arrays) -> Any:
        """Per request, on the CPU: wire tensors → an item (default: unchanged)."""
        return inputs

    def predict(self, batch: Any) -> Arrays:
        """Per batch, on the device: the batch → output tensors with the batch's rows."""
        raise NotImplementedError(f"model '{self.name}' does not implement predict")

    def postprocess(self, output: Any) -> Arrays:
        """Per request, on the CPU: this request's part of the outputs → response tensors."""
        return dict(output)

    # -- batching hooks -------------------------------------------------------------------------

    def collate(self, items: Sequence[Any]) -> Any:
        """Join items into one batch (default: concatenate each key along axis 0)."""
        if len(items) == 1:
            return items[0]
        return {k: np.concatenate([item[k] for item in items], axis=0) for k in items[0]}

    def split(self, outputs: Arrays, rows: Sequence[int]) -> list[Any]:
        """Cut a batch's outputs into per-request parts of ``rows`` rows each."""
        if len(rows) == 1:
            return [outputs]
        parts: list[Any] = []
        start = 0
        for n in rows:
            parts.append({k: v[start : start + n] for k, v in outputs.items()})
            start += n
        return parts

    def rows(self, inputs: Mapping[str, npt.NDArray[Any]]) -> int:
        """Rows a request contributes to a batch: its leading dimension (1 with batching off)."""
        if self.batching.max_batch_size == 0:
            return 1
        first = next(iter(inputs.values()))
        return int(first.shape[0]) if first.ndim else 1

    def sample(self) -> Any:
        """One request's item (already pre-processed, one row when batching) for warm-up.

        Default: :meth:`preprocess` of zeros of the declared inputs, a ``-1`` dimension taken as
        1. A model with a ``BYTES`` input (encoded files, text) must override this (else it
        raises ``LanesError("no_sample")`` and the server skips its warm-up, with a warning);
        so must one whose ``preprocess`` cannot take zeros.
        """
        wire: Arrays = {}
        for spec in self.inputs:
            if spec.datatype == "BYTES":
                raise LanesError(
                    NO_SAMPLE,
                    f"model '{self.name}': input '{spec.name}' is BYTES, so no warm-up sample "
                    "can be made from zeros; override Model.sample() to warm it up",
                )
            shape = tuple(1 if d == -1 else d for d in spec.shape)
            wire[spec.name] = np.zeros(shape, dtype=DATATYPES[spec.datatype])
        return self.preprocess(wire)

    def replica(self, device: Device) -> Model:
        """A copy of this model loaded on ``device``."""
        r = copy.copy(self)
        r.load(device)
        return r


RESERVED_NAMES = {
    "stats": "reserved: GET /v2/models/stats is the statistics of every model; rename the model",
    ".": "reserved: a URL cannot name it; rename the model",
    "..": "reserved: a URL cannot name it; rename the model",
}
"""Model names the REST routes cannot reach, with the reason each is refused."""


def validate(model: Model) -> None:
    """Refuse a model whose declaration cannot be served, with a message that names the rule.

    A model that batches (``max_batch_size > 0``) needs a leading batch dimension (``-1``) on every
    input and output; names must be unique and non-empty, and not one of :data:`RESERVED_NAMES`.
    """
    if not model.name or "/" in model.name:
        raise LanesError(MODEL_INVALID, f"model name '{model.name}': must be non-empty, no '/'")
    if model.name in RESERVED_NAMES:
        raise LanesError(MODEL_INVALID, f"model name '{model.name}': {RESERVED_NAMES[model.name]}")
    for role, specs in (("input", model.inputs), ("output", model.outputs)):
        if not specs:
            raise LanesError(MODEL_INVALID, f"model '{model.name}': declares no {role}s")
        names = [s.name for s in specs]
        if len(set(names)) != len(names):
            raise LanesError(MODEL_INVALID, f"model '{model.name}': duplicate {role} names")
        if model.batching.max_batch_size > 0:
            for s in specs:
                if not s.shape or s.shape[0] != -1:
                    raise LanesError(
                        MODEL_INVALID,
                        f"model '{model.name}': {role} '{s.name}' has shape {list(s.shape)} "
                        f"with no batch dimension, but max_batch_size = "
                        f"{model.batching.max_batch_size}: declare the first dimension as -1 "
                        "or set max_batch_size = 0",
                    )
    unknown = set(model.devices) - {"cpu", "cuda", "sim"}
    if unknown:
        raise LanesError(
            MODEL_INVALID,
            f"model '{model.name}': devices {sorted(unknown)}: allowed are cpu, cuda, sim",
        )
