"""A run's device calls by their thread's clocks: running, waiting for a core, stopped.

``lanes serve``'s device timeline gives every call (one batch's runtime call) its wall time
(``measured_ms``), the CPU its thread ran in it (``cpu_ms``) and the time that thread waited in
the run queue for a core meanwhile (``run_delay_ms``; docs/metrics.md). The rest, ``measured -
cpu - run_delay``, is time the thread neither ran nor waited for a core of this guest: it was
blocked, or the hypervisor had stopped its vCPU to run another guest (steal, which neither clock
counts). An ONNX Runtime call on a CPU device with one intra-op thread never blocks, so there the
rest is the hypervisor's stops, call by call — in the run's own busy window, on the cores the
calls ran on (a Python model's call can also block on the GIL).

**Rule** (:func:`summary`), over the calls of devices named ``cpu:*`` whose slices carry both
clocks (a GPU's calls block on the device, so their rest is not a stop):

- ``shares``: the calls' CPU, run delay and rest, each summed over all calls and divided by the
  sum of their wall times;
- ``stops``: the calls whose rest exceeds :data:`STOP_MIN_MS` (the gap bench/calibrate/stops.py
  calls a stop): how many, their rate per second of the calls' *exposure* (the sum over calls of
  CPU plus rest: the time a vCPU ran a call, stopped or not — a thread waiting in the run queue
  while its vCPU is stopped counts the stop as run delay, so each stop shows in the one call
  then running), and the quantiles of their rest (a call short beside the stops holds at most
  one, so these are the stops' lengths);
- ``tail``: the slowest :data:`TAIL` of calls by wall time (at least one): their wall time's p50
  and the shares of it that were rest and run delay — whether the calls' tail is the
  hypervisor's or the run queue's.

:func:`stopped_tail` is the figure the lab names a run by (``summary["stopped"]``,
:mod:`lanes.lab.aggregate`): the tail's rest share, where it reaches :data:`STOPPED_TAIL`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

STOP_MIN_MS = 0.1
"""A call's rest above this is a stop (bench/calibrate/stops.py's gap, 100 µs)."""
TAIL = 0.01
"""The share of calls, slowest first, whose time ``tail`` splits."""
STOPPED_TAIL = 0.25
"""The tail's rest share at which the lab names a run stopped: a quarter of the slowest calls'
wall time spent with the vCPU taken away."""
QUANTILES = (0.5, 0.9, 0.99)


def _quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values``, linear between order statistics (numpy's default)."""
    return float(np.quantile(values, q))


def calls(trace: Mapping[str, Any]) -> list[tuple[float, float, float]]:
    """``(wall_ms, cpu_ms, run_delay_ms)`` of every call of a ``cpu:*`` device in a timeline
    (Chrome trace events, ``GET /v2/trace``) that carries both clocks."""
    events = trace.get("traceEvents") or []
    cpu_devices = {
        e.get("tid")
        for e in events
        if e.get("ph") == "M"
        and e.get("name") == "thread_name"
        and str((e.get("args") or {}).get("name", "")).startswith("cpu:")
    }
    out = []
    for e in events:
        if e.get("ph") != "X" or e.get("tid") not in cpu_devices:
            continue
        args = e.get("args") or {}
        wall, cpu, delay = args.get("measured_ms"), args.get("cpu_ms"), args.get("run_delay_ms")
        if (
            isinstance(wall, (int, float))
            and isinstance(cpu, (int, float))
            and isinstance(delay, (int, float))
        ):
            out.append((float(wall), float(cpu), float(delay)))
    return out


def _rest(wall: float, cpu: float, delay: float) -> float:
    return max(0.0, wall - cpu - delay)


def summary(trace: Mapping[str, Any]) -> dict[str, Any] | None:
    """The run's calls split by their clocks (see the module's rule); None when no call of a
    ``cpu:*`` device carries both clocks."""
    return summarise(calls(trace))


def summarise(found: Iterable[tuple[float, float, float]]) -> dict[str, Any] | None:
    """:func:`summary` over ``(wall_ms, cpu_ms, run_delay_ms)`` triples."""
    rows = list(found)
    if not rows:
        return None
    wall = sum(r[0] for r in rows)
    rests = [_rest(*r) for r in rows]
    exposure = sum(r[1] for r in rows) + sum(rests)
    stops = sorted(x for x in rests if x > STOP_MIN_MS)
    slowest = sorted(rows, key=lambda r: r[0], reverse=True)[: max(1, round(TAIL * len(rows)))]
    tail_wall = sum(r[0] for r in slowest)

    def share(part: float, whole: float) -> float:
        return round(part / whole, 4) if whole > 0 else 0.0

    return {
        "calls": len(rows),
        "wall_s": round(wall / 1e3, 4),
        "shares": {
            "cpu": share(sum(r[1] for r in rows), wall),
            "run_delay": share(sum(r[2] for r in rows), wall),
            "rest": share(sum(rests), wall),
        },
        "stops": {
            "count": len(stops),
            "per_s": round(len(stops) / (exposure / 1e3), 3) if exposure > 0 else 0.0,
            "ms": {f"p{round(q * 100)}": round(_quantile(stops, q), 3) for q in QUANTILES}
            if stops
            else None,
            "max_ms": round(stops[-1], 3) if stops else None,
        },
        "tail": {
            "calls": len(slowest),
            "wall_p50_ms": round(_quantile(sorted(r[0] for r in slowest), 0.5), 3),
            "rest": share(sum(_rest(*r) for r in slowest), tail_wall),
            "run_delay": share(sum(r[2] for r in slowest), tail_wall),
        },
    }


def stopped_tail(block: Mapping[str, Any] | None) -> float | None:
    """The rest share of a run's slowest calls (its ``calls`` block's ``tail.rest``) where it
    reaches :data:`STOPPED_TAIL`, else None."""
    if not isinstance(block, Mapping):
        return None
    tail = block.get("tail")
    share = tail.get("rest") if isinstance(tail, Mapping) else None
    if isinstance(share, (int, float)) and share >= STOPPED_TAIL:
        return float(share)
    return None
