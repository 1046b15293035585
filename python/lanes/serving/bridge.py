"""The Python side of a Python model served by the native data plane (``lanes._core``).

The Rust server calls these functions with the GIL held: :func:`run_batch` once per batch on the
device's executor thread (or :func:`run_stacked`, when Rust stacked the batch itself: a model with
no hooks and ``Model``'s own ``collate``, ``split`` and ``rows`` pays no per-request Python),
:func:`preprocess` and :func:`postprocess` once per request on the front end's bounded pool (only
for a model that overrides them); for a demo zoo model whose network runs in Python (``cuda:N``,
the ``torch`` backend) :func:`zoo_logits` once per batch, its pre- and post-processing being in
Rust. Tensors cross as ``(name, datatype,
shape, data)`` tuples: ``data`` is the raw little-endian bytes of the array in C order, or a list of
``bytes`` for ``BYTES``.

Rule: nothing here raises into Rust. Every function answers ``(True, value)`` or, for a failure,
``(False, message)`` (:func:`run_batch`, the batch answers 500) or ``(False, status, message)``
(the hooks: 400 for a ``LanesError("bad_input")``, else 500), with the messages of the server's
error contract (``model 'NAME' preprocess failed: TypeError: ...``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from lanes.errors import BAD_INPUT, LanesError
from lanes.models.base import DATATYPES, Arrays, Model, datatype_of
from lanes.serving.codec import element_bytes

Wire = list[tuple[str, str, list[int], Any]]
"""Tensors as they cross: ``(name, datatype, shape, data)``."""


def arrays(wire: Wire) -> Arrays:
    """Wire tensors as numpy arrays (BYTES as ``dtype=object`` arrays of ``bytes``)."""
    out: Arrays = {}
    for name, datatype, shape, data in wire:
        if datatype == "BYTES":
            array = np.empty(len(data), dtype=object)
            array[:] = data
            out[name] = array.reshape(shape)
        else:
            dtype = np.dtype(DATATYPES[datatype]).newbyteorder("<")
            out[name] = np.frombuffer(data, dtype=dtype).reshape(shape)
    return out


def wire(outputs: Mapping[str, npt.NDArray[Any]]) -> Wire:
    """Output arrays as wire tensors; an array with no KServe datatype raises ``LanesError``."""
    out: Wire = []
    for name, value in outputs.items():
        array = np.asarray(value)
        try:
            datatype = datatype_of(array)
        except LanesError as err:
            raise LanesError(err.code, f"output '{name}': {err.message}") from None
        shape = list(array.shape)
        if datatype == "BYTES":
            out.append((name, datatype, shape, [element_bytes(v) for v in array.reshape(-1)]))
        else:
            little = array.astype(array.dtype.newbyteorder("<"), copy=False)
            out.append((name, datatype, shape, np.ascontiguousarray(little).tobytes()))
    return out


def run_batch(
    replica: Model, items: Sequence[Any], wires: Sequence[Wire | None], postprocess: bool
) -> tuple[bool, Any]:
    """One batch: each request's item (its ``preprocess`` result as ``(item, rows)``, or built
    from its wire tensors), ``collate`` → ``predict`` → ``split``; the parts as wire tensors, or
    as they are for the model's ``postprocess``."""
    try:
        batch: list[Any] = []
        rows: list[int] = []
        for item, tensors in zip(items, wires, strict=True):
            if tensors is not None:
                inputs = arrays(tensors)
                batch.append(inputs)
                rows.append(replica.rows(inputs))
            else:
                batch.append(item[0])
                rows.append(item[1])
        parts = replica.split(replica.predict(replica.collate(batch)), rows)
        if len(parts) != len(batch):
            raise LanesError(
                "model_failed", f"split returned {len(parts)} parts for {len(batch)} requests"
            )
        if postprocess:
            return True, list(parts)
        return True, [wire(part) for part in parts]
    except Exception as err:
        return False, f"{type(err).__name__}: {err}"


def run_stacked(replica: Model, tensors: Wire) -> tuple[bool, Any]:
    """One batch already stacked in Rust (lanes-py's stacked rule, for a model with
    ``Model``'s own ``collate``/``split``/``rows`` and no hooks): ``predict`` on the stacked
    arrays; its outputs as wire tensors for Rust to cut back into the requests' rows."""
    try:
        return True, wire(replica.predict(arrays(tensors)))
    except Exception as err:
        return False, f"{type(err).__name__}: {err}"


def zoo_logits(replica: Model, x: bytes, shape: list[int]) -> tuple[bool, Any]:
    """A demo zoo model's network on one batch whose pre-processing ran in Rust: ``x`` is the
    float32 little-endian bytes of the stacked ``[N, 1, h, w]`` input; the answer is
    ``(True, (logits bytes, logits shape))``, float32 little-endian, rows first."""
    try:
        batch = np.frombuffer(x, dtype="<f4").reshape(shape)
        logits = np.asarray(replica.predict({"x": batch})["logits"])
        out = np.ascontiguousarray(logits, dtype="<f4")
        return True, (out.tobytes(), list(out.shape))
    except Exception as err:
        return False, f"{type(err).__name__}: {err}"


def preprocess(model: Model, tensors: Wire) -> tuple[Any, ...]:
    """A request's ``preprocess``: ``(True, (item, rows))``."""
    try:
        inputs = arrays(tensors)
        return True, (model.preprocess(inputs), model.rows(inputs))
    except LanesError as err:
        return False, 400 if err.code == BAD_INPUT else 500, err.message
    except Exception as err:
        return (
            False,
            500,
            f"model '{model.name}' preprocess failed: {type(err).__name__}: {err}",
        )


def postprocess(model: Model, part: Any) -> tuple[Any, ...]:
    """A request's ``postprocess``: ``(True, wire tensors)``."""
    try:
        outputs = model.postprocess(part)
    except Exception as err:
        return (
            False,
            500,
            f"model '{model.name}' postprocess failed: {type(err).__name__}: {err}",
        )
    try:
        if not isinstance(outputs, Mapping):
            raise TypeError(
                f"postprocess returned {type(outputs).__name__}, not a mapping of arrays"
            )
        return True, wire(outputs)
    except LanesError as err:
        return False, 500, err.message
    except Exception as err:
        return False, 500, f"internal error: {type(err).__name__}: {err}"
