"""The device timelines of a calibration lab run, summarised for ``compare.py``.

``lanes bench run`` saves each run's device timeline (``runs/VARIANT/L*-r*.trace.json``: one
slice per batch with its model, its size, the runtime call's ``measured_ms`` and the slice's
``dur`` — dispatched to completed on the driver's clock). They are large; this keeps what the
calibration reads of them, per run and per (model, batch size): the batches, the median and
mean ``measured_ms`` and the median ``dur - measured_ms`` (what holds a device beyond the runtime
call: the hand-offs between the driver and the device thread); and per run the distribution of
that hold over all its batches (``hold_quantiles_ms``: ``[p, ms]`` at the levels of ``HOLD_P``,
linear between order statistics), which ``compare.py`` gives the simulator as
``host.device_hold_ms``. The same hold by how many other runtime calls were running when the
batch was dispatched (``hold_by_calls``: ``{"0": [batches, mean ms], "1": ..., "3+": ...}``;
a call runs from its slice's end minus its ``measured_ms`` to the slice's end), and the
distribution of the holds of batches dispatched while at least ``--cores`` calls ran
(``hold_busy_quantiles_ms``, ``hold_busy_batches``): every core running a call, the device
thread waits for one — ``compare.py`` gives the ``independent`` runs' to the simulator as
``host.device_hold_busy_ms``. Where the slices carry ``cpu_ms`` (the CPU time each runtime call
ran on its executor thread, recorded by ``lanes serve`` since 2026-11-28), per model over all
its calls (``calls``): how many, their mean ``measured_ms`` and ``cpu_ms``, the mean time off a
core (``off_ms``: :func:`off_core`, the call's ``run_delay_ms`` where the slice carries it, else
``measured_ms - cpu_ms`` clamped at 0, which also holds the hypervisor's stops), its p99
(``off_p99_ms``), and ``off_per_cpu`` (the calls' time off a core per ms of their CPU: on CPU
executors with one intra-op thread, their run delay, the per-call counterpart of ``sched.py``'s
per-thread figure), and over all the run's calls those preempted (``preempted``: off their core
longer than :data:`OFF_MIN_MS`, with the quantiles of that time — ``compare.call_preemption``
reads them as a preemption rate and its waits). Writes ``timelines.json`` into the results
folder (or ``--out``), small enough to keep beside the run's other files.

Run:  python bench/calibrate/timelines.py RESULTS [--out FILE] [--cores 2]
"""

from __future__ import annotations

import argparse
import bisect
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

HOLD_P = (0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 1.0)
"""The levels at which a run's hold is summarised: dense in the tail, which sets the p99s."""


def quantile(xs: list[float], p: float) -> float:
    """The ``p`` quantile of sorted ``xs``, linear between order statistics."""
    if len(xs) == 1:
        return xs[0]
    k = p * (len(xs) - 1)
    i = min(int(k), len(xs) - 2)
    return xs[i] + (xs[i + 1] - xs[i]) * (k - i)


OFF_MIN_MS = 0.05
"""A runtime call off its core longer than this (:func:`off_core`) counts as preempted
(``preempted``); shorter is the clocks' reading and a wake-up's jitter."""


def off_core(args: dict[str, Any]) -> float:
    """A call's time off its core waiting for one, ms: its ``run_delay_ms`` where the slice
    carries it (``lanes serve`` since 2026-12-03), else ``measured_ms - cpu_ms`` (at least 0),
    which also holds the time the hypervisor stopped the call (round 37: what is left of the
    wall time beside both clocks)."""
    if "run_delay_ms" in args:
        return float(args["run_delay_ms"])
    return max(0.0, args["measured_ms"] - args["cpu_ms"])


CALLS_SEEN = 40
"""Calls started before a dispatch that are looked at for still running (there are at most a
few runtimes per device; a generous bound)."""


def call_span(batch: dict[str, Any]) -> tuple[float, float]:
    """A batch's runtime call on the trace's clock (µs): its slice's end minus its
    ``measured_ms`` to the slice's end (the device hold before it is not the call)."""
    end = batch["ts"] + batch["dur"]
    return end - batch["args"]["measured_ms"] * 1e3, end


def calls_running(batches: list[dict[str, Any]]) -> list[int]:
    """For each batch (by dispatch), how many other batches' runtime calls were running when it
    was dispatched."""
    calls = sorted(call_span(ev) for ev in batches)
    starts = [c[0] for c in calls]
    out = []
    for ev in batches:
        t = ev["ts"]
        i = bisect.bisect_left(starts, t)
        out.append(sum(1 for _, end in calls[max(0, i - CALLS_SEEN) : i] if end > t))
    return out


def summarise(trace: dict[str, Any], cores: int = 2) -> dict[str, Any]:
    """One run's timeline: ``{model: {n: {batches, measured_ms, mean_ms, hold_ms}}}`` (and the
    median ``cpu_ms`` and mean ``cpu_mean_ms`` where every batch of the cell carries it), the
    run's median ``hold_ms`` over all batches and its quantiles (``hold_quantiles_ms``), the
    hold by the calls running at dispatch (``hold_by_calls``) and the quantiles of the holds of
    batches dispatched while at least ``cores`` calls ran (``hold_busy_quantiles_ms``)."""
    measured: dict[tuple[str, int], list[float]] = defaultdict(list)
    cpu: dict[tuple[str, int], list[float]] = defaultdict(list)
    held: dict[tuple[str, int], list[float]] = defaultdict(list)
    batches = [
        ev for ev in trace["traceEvents"] if ev.get("ph") == "X" and not ev["args"].get("failed")
    ]
    by_calls: dict[str, list[float]] = defaultdict(list)
    busy = []
    for ev, running in zip(batches, calls_running(batches), strict=True):
        a = ev["args"]
        key = (a["model"], int(a["batch_size"]))
        measured[key].append(a["measured_ms"])
        if "cpu_ms" in a:
            cpu[key].append(a["cpu_ms"])
        held[key].append(ev["dur"] / 1e3 - a["measured_ms"])
        by_calls[str(running) if running < 3 else "3+"].append(held[key][-1])
        if running >= cores:
            busy.append(max(0.0, held[key][-1]))
    out: dict[str, Any] = {"models": {}}
    for (model, n), xs in sorted(measured.items()):
        cell = out["models"].setdefault(model, {})[str(n)] = {
            "batches": len(xs),
            "measured_ms": round(statistics.median(xs), 4),
            "mean_ms": round(statistics.fmean(xs), 4),
            "hold_ms": round(statistics.median(held[(model, n)]), 4),
        }
        if len(cpu[(model, n)]) == len(xs):
            cell["cpu_ms"] = round(statistics.median(cpu[(model, n)]), 4)
            cell["cpu_mean_ms"] = round(statistics.fmean(cpu[(model, n)]), 4)
    every = sorted(max(0.0, h) for hs in held.values() for h in hs)
    out["hold_ms"] = round(statistics.median(every), 4) if every else None
    if every:
        out["hold_quantiles_ms"] = [[p, round(quantile(every, p), 4)] for p in HOLD_P]
    out["hold_by_calls"] = {
        k: [len(hs), round(statistics.fmean(max(0.0, h) for h in hs), 4)]
        for k, hs in sorted(by_calls.items())
    }
    calls = per_model_calls(batches)
    if calls:
        out["calls"] = calls
        out["preempted"] = preempted_calls(batches)
    busy.sort()
    out["hold_busy_batches"] = len(busy)
    if len(busy) >= 2:
        out["hold_busy_quantiles_ms"] = [[p, round(quantile(busy, p), 4)] for p in HOLD_P]
    return out


def per_model_calls(batches: list[dict[str, Any]]) -> dict[str, Any]:
    """Per model, its runtime calls' CPU and time off a core (``summarise``'s ``calls``);
    empty unless every batch carries ``cpu_ms``."""
    if not batches or any("cpu_ms" not in ev["args"] for ev in batches):
        return {}
    by_model: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for ev in batches:
        a = ev["args"]
        by_model[a["model"]].append((a["measured_ms"], a["cpu_ms"], off_core(a)))
    out = {}
    for model, pairs in sorted(by_model.items()):
        wall = [w for w, _, _ in pairs]
        cpu = [c for _, c, _ in pairs]
        off = sorted(o for _, _, o in pairs)
        out[model] = {
            "calls": len(pairs),
            "measured_ms": round(statistics.fmean(wall), 4),
            "cpu_ms": round(statistics.fmean(cpu), 4),
            "off_ms": round(statistics.fmean(off), 4),
            "off_p99_ms": round(quantile(off, 0.99), 4),
            "off_per_cpu": round(sum(off) / sum(cpu), 4) if sum(cpu) > 0 else None,
        }
    return out


def preempted_calls(batches: list[dict[str, Any]]) -> dict[str, Any]:
    """Over all the run's runtime calls (every batch carries ``cpu_ms``), those off their core
    longer than :data:`OFF_MIN_MS`: ``{calls, cpu_ms, span_s, preempted, quantiles_ms}`` —
    how many calls, their CPU in all, the seconds from the first dispatch to the last
    completion (so ``cpu_ms / span_s / 1e3`` is the cores the calls kept busy), how many were
    preempted and the quantiles of those calls' time off
    a core (``[p, ms]`` at ``HOLD_P``; absent with fewer than two). ``preempted / cpu_ms`` is a
    rate of preemptions per ms of CPU and ``quantiles_ms`` their waits, as ``sched.py``'s per
    thread (each preempted call counted once, so the rate times the waits' mean is the calls'
    time off a core per ms of CPU beyond the calls under the bound)."""
    off, cpu = [], 0.0
    for ev in batches:
        a = ev["args"]
        cpu += a["cpu_ms"]
        if (waited := off_core(a)) > OFF_MIN_MS:
            off.append(waited)
    off.sort()
    span = max(ev["ts"] + ev["dur"] for ev in batches) - min(ev["ts"] for ev in batches)
    out: dict[str, Any] = {
        "calls": len(batches),
        "cpu_ms": round(cpu, 3),
        "span_s": round(span / 1e6, 4),
        "preempted": len(off),
    }
    if len(off) >= 2:
        out["quantiles_ms"] = [[p, round(quantile(off, p), 4)] for p in HOLD_P]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="a lanes bench run results folder")
    ap.add_argument("--out", type=Path, help="default: RESULTS/timelines.json")
    ap.add_argument(
        "--cores", type=int, default=2, help="the host's cores (hold_busy_quantiles_ms: 2)"
    )
    args = ap.parse_args(argv)
    runs: dict[str, Any] = {}
    for path in sorted(args.results.glob("runs/*/L*-r*.trace.json")):
        run = path.name.removesuffix(".trace.json")
        runs[f"{path.parent.name}/{run}"] = summarise(json.loads(path.read_text()), args.cores)
    if not runs:
        raise SystemExit(f"timelines: {args.results} holds no runs/*/L*-r*.trace.json")
    out = args.out or args.results / "timelines.json"
    out.write_text(json.dumps(runs, indent=1) + "\n")
    print(f"{len(runs)} timelines -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
