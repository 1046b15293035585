"""Does a runtime call take more CPU while the other executor runs one? The thirtieth round's
check, on grids kept with their request traces (round 29's, in /tmp/r29).

For every call of the ``fifo`` and ``sjf`` runs (``cpu_ms`` in the device timeline), the share of
its call (``measured_ms``, ending at its slice's end) during which the other device was in a call
of its own; each call's CPU over the median CPU of the calls of its model and batch size that
overlapped less than 0.1 (at least 20 such calls). Printed per model, by overlap in fifths: the
median and mean of that ratio and the calls counted. A ratio that grows with the overlap would
be contention between the two executors (shared caches, memory bandwidth); none does.

Run:  python docs/results/calibration/round30/overlap.py TRACE.json [TRACE.json ...]
"""

from __future__ import annotations

import bisect
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path


def calls(path: str) -> list[tuple[str, int, float, float]]:
    """``(model, size, overlap share, cpu_ms)`` of every call in one device timeline."""
    trace = json.loads(Path(path).read_text())
    jobs = [e for e in trace["traceEvents"] if e.get("ph") == "X" and "cpu_ms" in e["args"]]
    spans: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for j in jobs:
        end = (j["ts"] + j["dur"]) / 1e3
        spans[j["tid"]].append((end - j["args"]["measured_ms"], end))
    for s in spans.values():
        s.sort()
    out = []
    for j in jobs:
        a = j["args"]
        end = (j["ts"] + j["dur"]) / 1e3
        start = end - a["measured_ms"]
        shared = 0.0
        for device, s in spans.items():
            if device == j["tid"]:
                continue
            for other_start, other_end in s[bisect.bisect_left(s, (start - 200.0, 0.0)) :]:
                if other_start > end:
                    break
                shared += max(0.0, min(end, other_end) - max(start, other_start))
        out.append((a["model"], a["batch_size"], shared / max(a["measured_ms"], 1e-9), a["cpu_ms"]))
    return out


def main(paths: list[str]) -> int:
    every = [c for p in paths for c in calls(p)]
    alone: dict[tuple[str, int], list[float]] = defaultdict(list)
    for model, n, share, cpu in every:
        if share < 0.1:
            alone[(model, n)].append(cpu)
    ref = {k: statistics.median(v) for k, v in alone.items() if len(v) >= 20}
    bins: dict[tuple[str, int], list[float]] = defaultdict(list)
    for model, n, share, cpu in every:
        if (model, n) in ref:
            bins[(model, min(4, int(share * 5)))].append(cpu / ref[(model, n)])
    print(f"{len(paths)} timelines, {len(every)} calls")
    print()
    print("| model | overlap 0-0.2 | 0.2-0.4 | 0.4-0.6 | 0.6-0.8 | 0.8-1 |")
    print("|---|---:|---:|---:|---:|---:|")
    for model in sorted({m for m, _ in bins}):
        cells = []
        for b in range(5):
            xs = bins.get((model, b), [])
            cells.append(
                f"{statistics.median(xs):.3f} / {statistics.fmean(xs):.3f} ({len(xs)})"
                if xs
                else ""
            )
        print(f"| {model} | " + " | ".join(cells) + " |")
    print()
    print("Each cell: the CPU over the lone calls' median, median / mean (calls).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
