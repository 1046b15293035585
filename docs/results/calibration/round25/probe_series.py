"""The speed probe against the calls' speed over time, within runs (round 25).

Round 24 asked whether the probe's slow spells come before a runaway run's backlog. Per run at
600-900 req/s: the calls' speed per 500 ms (replay.speed_series against the scenario's costs)
and the probe's (the median of its samples in the bin over the run's median sample), on one
clock (the probe's offsets are seconds into the window, ``started_unix``; the trace's are µs
from ``otherData.origin_unix_s``). Both logs are taken about their run's mean, and correlated
over the bins pooled: at the same bin, with the probe one bin earlier, and one bin later;
separately for the runaway runs (p99 at least twice the level's median run) and the others.

Run:  python docs/results/calibration/round25/probe_series.py SCENARIO GRID [GRID ...]
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "bench" / "calibrate"))

import replay

from lanes.sim.scenario import Scenario

BIN_S = 0.5
RUNAWAY = 2.0


def probe_bins(result: dict, trace: dict, bins: int, width: float) -> list[float | None]:
    """The probe's speed per bin on replay's clock (None where a bin holds no sample)."""
    series = (result.get("speed_probe") or {}).get("series") or []
    if not series:
        return [None] * bins
    median = statistics.median(ms for _, ms in series)
    shift = result["started_unix"] - trace["otherData"]["origin_unix_s"] - replay.origin(trace)
    per: list[list[float]] = [[] for _ in range(bins)]
    for offset, ms in series:
        i = math.floor((shift + offset) / width)
        if 0 <= i < bins:
            per[i].append(ms / median)
    return [statistics.median(xs) if xs else None for xs in per]


def centred(xs: list[float]) -> list[float]:
    logs = [math.log(x) for x in xs]
    m = statistics.fmean(logs)
    return [x - m for x in logs]


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.split("Run:")[1].strip(), file=sys.stderr)
        return 2
    costs = replay.scenario_costs(Scenario.load(Path(argv[0])))
    pairs: dict[str, dict[int, list[tuple[float, float]]]] = {"runaway": {}, "other": {}}
    for grid in map(Path, argv[1:]):
        runs = [
            r
            for r in replay.load(grid, ["fifo", "sjf", "independent", "default"], None)
            if r.rate >= 600
        ]
        levels: dict[tuple[str, float], list[float]] = {}
        for r in runs:
            levels.setdefault((r.variant, r.rate), []).append(r.p99)
        for r in runs:
            variant, name = r.id.split("/")
            result = json.loads((grid / "runs" / variant / f"{name}.json").read_text())
            trace = json.loads((grid / "runs" / variant / f"{name}.trace.json").read_text())
            calls, width = replay.speed_series(r, costs, BIN_S)
            probe = probe_bins(result, trace, len(calls), width)
            keep = [i for i, p in enumerate(probe) if p is not None]
            if len(keep) < 4:
                continue
            c = dict(zip(keep, centred([calls[i] for i in keep]), strict=True))
            p = dict(zip(keep, centred([probe[i] for i in keep]), strict=True))  # type: ignore[misc]
            kind = (
                "runaway"
                if r.p99 >= RUNAWAY * statistics.median(levels[(r.variant, r.rate)])
                else "other"
            )
            for lag in (-1, 0, 1):
                got = pairs[kind].setdefault(lag, [])
                got += [(p[i], c[i + lag]) for i in keep if i + lag in c]
    print(f"probe against the calls' speed, bins of {BIN_S:g} s, runs at 600-900 req/s\n")
    print("| runs | bins | probe one bin before the calls | same bin | probe one bin after |")
    print("|---|---:|---:|---:|---:|")
    for kind, by_lag in pairs.items():
        cells = []
        for lag in (1, 0, -1):
            xs = by_lag.get(lag, [])
            r = statistics.correlation(*zip(*xs, strict=True)) if len(xs) > 2 else float("nan")
            cells.append(f"{r:+.2f}")
        print(f"| {kind} | {len(by_lag.get(0, []))} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
