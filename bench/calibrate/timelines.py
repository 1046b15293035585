"""The device timelines of a calibration lab run, summarised for ``compare.py``.

``lanes bench run`` saves each run's device timeline (``runs/VARIANT/L*-r*.trace.json``: one
slice per batch with its model, its size, the runtime call's ``measured_ms`` and the slice's
``dur`` — dispatched to completed on the driver's clock). They are large; this keeps what the
calibration reads of them, per run and per (model, batch size): the batches, the median and
mean ``measured_ms`` and the median ``dur - measured_ms`` (what holds a device beyond the runtime
call: the hand-offs between the driver and the device thread); and per run the distribution of
that hold over all its batches (``hold_quantiles_ms``: ``[p, ms]`` at the levels of ``HOLD_P``,
linear between order statistics), which ``compare.py`` gives the simulator as
``host.device_hold_ms``. Writes ``timelines.json`` into the results folder (or ``--out``), small
enough to keep beside the run's other files.

Run:  python bench/calibrate/timelines.py RESULTS [--out FILE]
"""

from __future__ import annotations

import argparse
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


def summarise(trace: dict[str, Any]) -> dict[str, Any]:
    """One run's timeline: ``{model: {n: {batches, measured_ms, mean_ms, hold_ms}}}``, the
    run's median ``hold_ms`` over all batches and its quantiles (``hold_quantiles_ms``)."""
    measured: dict[tuple[str, int], list[float]] = defaultdict(list)
    held: dict[tuple[str, int], list[float]] = defaultdict(list)
    for ev in trace["traceEvents"]:
        if ev.get("ph") != "X" or ev["args"].get("failed"):
            continue
        a = ev["args"]
        key = (a["model"], int(a["batch_size"]))
        measured[key].append(a["measured_ms"])
        held[key].append(ev["dur"] / 1e3 - a["measured_ms"])
    out: dict[str, Any] = {"models": {}}
    for (model, n), xs in sorted(measured.items()):
        out["models"].setdefault(model, {})[str(n)] = {
            "batches": len(xs),
            "measured_ms": round(statistics.median(xs), 4),
            "mean_ms": round(statistics.fmean(xs), 4),
            "hold_ms": round(statistics.median(held[(model, n)]), 4),
        }
    every = sorted(max(0.0, h) for hs in held.values() for h in hs)
    out["hold_ms"] = round(statistics.median(every), 4) if every else None
    if every:
        out["hold_quantiles_ms"] = [[p, round(quantile(every, p), 4)] for p in HOLD_P]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="a lanes bench run results folder")
    ap.add_argument("--out", type=Path, help="default: RESULTS/timelines.json")
    args = ap.parse_args(argv)
    runs: dict[str, Any] = {}
    for path in sorted(args.results.glob("runs/*/L*-r*.trace.json")):
        run = path.name.removesuffix(".trace.json")
        runs[f"{path.parent.name}/{run}"] = summarise(json.loads(path.read_text()))
    if not runs:
        raise SystemExit(f"timelines: {args.results} holds no runs/*/L*-r*.trace.json")
    out = args.out or args.results / "timelines.json"
    out.write_text(json.dumps(runs, indent=1) + "\n")
    print(f"{len(runs)} timelines -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
