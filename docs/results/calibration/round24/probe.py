"""The host speed probe (lanes.lab.speed_probe) against the server's own calls.

For each grid given (run with the probe), per run: the probe's host speed (its ``work_ms`` over
the grid's median run's) and the calls' speed (spells.py: the run's calls' CPU over the same
cells in the median run of its variant and level, work-weighted). Printed:

- **the probe's spread**: the sd of its log host speed over the runs, its quantiles, and the runs
  at lanes.lab.speed_probe's ``SLOW_HOST`` or more;
- **does the probe see the calls' spells**: the correlation of the two logs over the runs, at the
  light levels (0-1, where nothing queues) and at the heavier ones, and the probe's host speed
  of the runaway runs (spells.py's rule) against the others';
- **per second**: within each run, the probe's median per second against the calls' speed in
  that second (spells.py's windows), correlated over the run's seconds and averaged over runs.

Run from the repository root:
  python docs/results/calibration/round24/probe.py GRID [GRID ...]
"""

from __future__ import annotations

import collections
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[3] / "python")]
from spells import WINDOW_MS, mark_runaway, quantile, run_speeds, windows_of  # noqa: E402

from lanes.lab.speed_probe import SLOW_HOST, host_speeds  # noqa: E402

LIGHT = (0, 1)


def per_second_pairs(run: dict[str, Any], doc: dict[str, Any]) -> list[tuple[float, float]]:
    """(probe's log speed, calls' log speed) per second of the run, each over its run median."""
    series = (doc.get("speed_probe") or {}).get("series") or []
    trace = run["path"].with_suffix(".trace.json")
    if not series or not trace.is_file():
        return []
    calls = windows_of(trace)
    run_median = statistics.median(ms for _, ms in series)
    probe_bins: dict[int, list[float]] = collections.defaultdict(list)
    for t, ms in series:
        # the probe starts at the window's start and the calls' first bin at the first call in
        # the window (the trace is cut to it): the same seconds, to within a call's spacing
        probe_bins[int(t * 1e3 // WINDOW_MS)].append(ms / run_median)
    return [
        (math.log(statistics.median(vals)), math.log(calls[w]))
        for w, vals in probe_bins.items()
        if w in calls and len(vals) >= 3
    ]


def main(argv: list[str]) -> int:
    if not argv:
        sys.exit(__doc__.split("Run from the repository root:")[1].strip())
    rows: list[tuple[dict[str, Any], dict[str, Any], float | None]] = []
    for grid in map(Path, argv):
        if not (grid / "timelines.json").is_file():
            sys.exit(f"probe: {grid} has no timelines.json: run bench/calibrate/timelines.py on it")
        runs = run_speeds(grid)
        docs = [json.loads(r["path"].read_text()) for r in runs]
        if not any(d.get("speed_probe") for d in docs):
            sys.exit(
                f"probe: {grid}'s runs carry no speed_probe (run before lanes.lab.speed_probe)"
            )
        rows += zip(runs, docs, host_speeds(docs), strict=True)
    mark_runaway([r for r, _, _ in rows])
    logs = [math.log(v) for _, _, v in rows if v]
    speeds = [math.exp(x) for x in logs]
    print(f"the probe over {len(logs)} runs of {len(argv)} grids:")
    print(
        f"sd of log host speed {statistics.pstdev(logs):.4f}; q10 {quantile(speeds, 0.1):.3f}, "
        f"median {statistics.median(speeds):.3f}, q90 {quantile(speeds, 0.9):.3f}, "
        f"q95 {quantile(speeds, 0.95):.3f}, max {max(speeds):.3f}; "
        f"{sum(v >= SLOW_HOST for v in speeds)} at {SLOW_HOST:g} or more"
    )
    print()
    print("| runs | n | corr(log probe, log calls' speed) | probe: median | q90 | max |")
    print("|---|---:|---:|---:|---:|---:|")
    groups = [
        ("light levels", lambda r: r["level"] in LIGHT),
        ("heavier levels", lambda r: r["level"] not in LIGHT),
        ("heavier, not runaway", lambda r: r["level"] not in LIGHT and not r["runaway"]),
        ("heavier, runaway", lambda r: r["level"] not in LIGHT and r["runaway"]),
    ]
    for name, keep in groups:
        pairs = [
            (math.log(v), r["log_speed"])
            for r, _, v in rows
            if keep(r) and v and r["log_speed"] is not None
        ]
        if not pairs:
            continue
        a, b = zip(*pairs, strict=True)
        corr = f"{statistics.correlation(a, b):+.2f}" if len(pairs) > 2 else "-"
        probe = [math.exp(x) for x in a]
        print(
            f"| {name} | {len(pairs)} | {corr} | {statistics.median(probe):.3f} | "
            f"{quantile(probe, 0.9):.3f} | {max(probe):.3f} |"
        )
    print()
    print(f"per second (windows of {WINDOW_MS:g} ms), within each run:")
    print("| runs | n | mean corr(log probe, log calls' speed) | seconds |")
    print("|---|---:|---:|---:|")
    for name, keep in groups:
        corrs, seconds = [], 0
        for r, doc, _ in rows:
            if not keep(r):
                continue
            pairs = per_second_pairs(r, doc)
            if len(pairs) < 4:
                continue
            a, b = zip(*pairs, strict=True)
            if len(set(a)) > 1 and len(set(b)) > 1:
                corrs.append(statistics.correlation(a, b))
                seconds += len(pairs)
        if corrs:
            print(f"| {name} | {len(corrs)} | {statistics.fmean(corrs):+.2f} | {seconds} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
