"""Client-side batching: calls from many callers coalesced into full batches.

**The rule.** Calls for the same model whose inputs agree in names, datatypes and every
dimension but the first (a *signature*) share an open batch. A call joins it; the batch is sent
as soon as its rows reach the limit (the model's ``max_batch_size``, or
``ClientConfig.max_batch_size`` when smaller), or ``batch_timeout_ms`` after its first call,
whichever comes first. A call that would overflow the open batch sends it and opens the next;
a call of the limit or more rows goes alone at once. A timeout of 0 sends every call at once.

A batch is one KServe request with the calls' rows stacked on the batch dimension (axis 0) in
call order; the answer's outputs are split back by the same row counts (:func:`split`). A
full batch passes straight through ``lanes serve``'s batcher: a queue holding
``max_batch_size`` rows is ready at once, and a request is never split or merged past the limit
(docs/client.md, "Fleet members").
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from lanes.client.errors import ClientError
from lanes.errors import BAD_RESPONSE

Arrays = dict[str, npt.NDArray[Any]]
Signature = tuple[str, tuple[tuple[str, str, tuple[int, ...]], ...]]


@dataclass(eq=False)
class Call:
    """One caller's request: its inputs, rows, deadline (loop time) and answer."""

    inputs: Arrays
    rows: int
    deadline: float | None
    future: asyncio.Future[Arrays]


@dataclass(eq=False)
class Batch:
    """Calls of one signature on their way as one request."""

    model: str
    calls: list[Call] = field(default_factory=list)
    rows: int = 0
    timer: asyncio.TimerHandle | None = None


def signature(model: str, inputs: Arrays) -> Signature:
    return model, tuple(sorted((n, a.dtype.str, a.shape[1:]) for n, a in inputs.items()))


class Coalescer:
    """Open batches by signature; hands each closed batch to ``send`` (on the event loop)."""

    def __init__(self, timeout_s: float, send: Callable[[Batch], None]) -> None:
        self._timeout_s = timeout_s
        self._send = send
        self._open: dict[Signature, Batch] = {}

    def add(self, model: str, call: Call, limit: int) -> None:
        """Place ``call`` in a batch of at most ``limit`` rows (module rule)."""
        key = signature(model, call.inputs)
        batch = self._open.get(key)
        if batch is not None and batch.rows + call.rows > limit:
            self._close(key, batch)
            batch = None
        if call.rows >= limit or self._timeout_s == 0:
            self._send(Batch(model, [call], call.rows))
            return
        if batch is None:
            batch = self._open[key] = Batch(model)
            loop = asyncio.get_running_loop()
            batch.timer = loop.call_later(self._timeout_s, self._close, key, batch)
        batch.calls.append(call)
        batch.rows += call.rows
        if batch.rows >= limit:
            self._close(key, batch)

    def _close(self, key: Signature, batch: Batch) -> None:
        if self._open.get(key) is not batch:
            return
        del self._open[key]
        if batch.timer is not None:
            batch.timer.cancel()
        self._send(batch)

    def flush(self) -> None:
        """Send every open batch now."""
        for key, batch in list(self._open.items()):
            self._close(key, batch)


def stack(calls: list[Call]) -> Arrays:
    """The calls' inputs stacked on axis 0, in call order."""
    if len(calls) == 1:
        return calls[0].inputs
    return {name: np.concatenate([c.inputs[name] for c in calls]) for name in calls[0].inputs}


def split(outputs: Arrays, calls: list[Call]) -> list[Arrays]:
    """The batch's outputs cut back into each call's rows."""
    if len(calls) == 1:
        return [outputs]
    total = sum(c.rows for c in calls)
    for name, array in outputs.items():
        if array.ndim == 0 or array.shape[0] != total:
            raise ClientError(
                BAD_RESPONSE,
                f"output '{name}' has shape {list(array.shape)}; a batch of {total} rows needs "
                f"{total} first",
            )
    cuts = np.cumsum([c.rows for c in calls])[:-1]
    parts = {name: np.split(array, cuts) for name, array in outputs.items()}
    return [{name: parts[name][i] for name in outputs} for i in range(len(calls))]
