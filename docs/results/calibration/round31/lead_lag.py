"""Within a run, does the calls' slowdown lead the backlog or follow it? Round 31, grid 201.

Per window of ``W`` ms of each ``fifo`` and ``sjf`` run at a level (request traces kept): the
mean log slowdown of the calls started in it (``measured_ms``, or ``cpu_ms`` with ``--cpu``, over
its model and batch size's median over the level's runs) against, ``k`` windows later, the
requests in flight (time-weighted, from each request's ``front`` begin to its ``back`` end) or,
with ``--against arrivals``, the requests arriving. Correlations are means over the runs. If
slow spells build queues, the slowdown leads (the correlation grows with k > 0); if a backlog
slowed the host, it would follow (k < 0); if the client's catch-up bursts did, the slowdown
would go with the arrivals.

Run:  .venv/bin/python docs/results/calibration/round31/lead_lag.py GRID LEVEL W \
        [--against inflight|arrivals] [--cpu]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

LAGS = range(-4, 5)


def events(path: Path) -> list[dict[str, Any]]:
    events_: list[dict[str, Any]] = json.loads(path.read_text())["traceEvents"]
    return events_


def calls(evs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in evs if e.get("ph") == "X" and e.get("cat") == "job"]


def series(
    evs: list[dict[str, Any]], median: dict[tuple[str, int], float], field: str, w: float, what: str
) -> tuple[np.ndarray, np.ndarray]:
    """The run's windows: mean log slowdown (NaN-free: empty windows at the run's mean) and the
    requests in flight or arriving."""
    jobs = calls(evs)
    t0 = min(c["ts"] for c in jobs)
    n = int((max(c["ts"] for c in jobs) - t0) // w)
    per: dict[int, list[float]] = defaultdict(list)
    for c in jobs:
        a, b = c["args"], int((c["ts"] - t0) // w)
        if b < n:
            per[b].append(math.log(a[field] / median[(a["model"], a["batch_size"])]))
    slow = np.array([statistics.fmean(per[b]) if per[b] else np.nan for b in range(n)])
    slow = np.where(np.isnan(slow), np.nanmean(slow), slow)
    begin = {e["id"]: e["ts"] for e in evs if e.get("name") == "front" and e.get("ph") == "b"}
    end = {e["id"]: e["ts"] for e in evs if e.get("name") == "back" and e.get("ph") == "e"}
    other = np.zeros(n)
    for rid, start in begin.items():
        if what == "arrivals":
            b = int((start - t0) // w)
            if 0 <= b < n:
                other[b] += 1
            continue
        if rid not in end:
            continue
        lo, hi = max(start, t0), min(end[rid], t0 + n * w)
        for b in range(int((lo - t0) // w), int((hi - t0 - 1e-9) // w) + 1):
            if 0 <= b < n:
                a0 = t0 + b * w
                other[b] += max(0.0, min(hi, a0 + w) - max(lo, a0)) / w
    return slow, other


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("grid", type=Path)
    ap.add_argument("level", type=int)
    ap.add_argument("window_ms", type=float)
    ap.add_argument("--against", choices=("inflight", "arrivals"), default="inflight")
    ap.add_argument("--cpu", action="store_true")
    args = ap.parse_args(argv)
    field = "cpu_ms" if args.cpu else "measured_ms"
    paths = sorted(
        p
        for v in ("fifo", "sjf")
        for p in (args.grid / "runs" / v).glob(f"L{args.level}-r?.trace.json")
    )
    if not paths:
        raise SystemExit(f"{args.grid}: no request traces at level {args.level}")
    runs = [events(p) for p in paths]
    cells: dict[tuple[str, int], list[float]] = defaultdict(list)
    for evs in runs:
        for c in calls(evs):
            cells[(c["args"]["model"], c["args"]["batch_size"])].append(c["args"][field])
    median = {k: statistics.median(v) for k, v in cells.items()}
    corr: dict[int, list[float]] = defaultdict(list)
    for evs in runs:
        slow, other = series(evs, median, field, args.window_ms * 1e3, args.against)
        for k in LAGS:
            a, b = (
                (slow[: len(slow) - k], other[k:])
                if k >= 0
                else (slow[-k:], other[: len(other) + k])
            )
            corr[k].append(float(np.corrcoef(a, b)[0, 1]))
    cells_text = " ".join(f"k{k:+d}:{statistics.fmean(corr[k]):+.2f}" for k in LAGS)
    print(
        f"{args.grid.name} L{args.level} {field} W={args.window_ms:g}ms: "
        f"corr(slowdown[t], {args.against}[t+k]) {cells_text}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
