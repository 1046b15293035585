"""The speed over time that replay.py gives each run, summed up per variant and level (round 25).

Each run's series (replay.speed_series: its calls' CPU bin by bin against the scenario's cost of
the same calls, bins of 250 ms) is read for: its mean (the run's speed against the scenario),
the spread of its bins' log about the run's own mean (sd), the lag-one autocorrelation of that
log (how long a spell lasts), and the share of bins 1.15x or more above the run's median bin (a
spell). Per (variant, level): the medians over the repeats, and the largest spread.

Run:  python docs/results/calibration/round25/series.py SCENARIO GRID [GRID ...]
"""

from __future__ import annotations

import itertools
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "bench" / "calibrate"))

import replay

from lanes.sim.scenario import Scenario

SPELL = 1.15
"""A bin this many times its run's median bin is in a spell."""


def summary(series: list[float]) -> tuple[float, float, float, float]:
    """(mean factor, sd of the log about its mean, lag-one autocorrelation, spell share)."""
    logs = [math.log(f) for f in series]
    m = statistics.fmean(logs)
    dev = [x - m for x in logs]
    var = statistics.fmean(d * d for d in dev)
    acf = sum(a * b for a, b in itertools.pairwise(dev)) / (len(dev) * var) if var else 0.0
    median = statistics.median(series)
    spells = sum(f >= SPELL * median for f in series) / len(series)
    return statistics.fmean(series), math.sqrt(var), acf, spells


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.split("Run:")[1].strip(), file=sys.stderr)
        return 2
    costs = replay.scenario_costs(Scenario.load(Path(argv[0])))
    per: dict[tuple[str, float], list[tuple[float, float, float, float]]] = {}
    for grid in argv[1:]:
        for run in replay.load(Path(grid), ["fifo", "sjf", "independent", "default"], None):
            series, _ = replay.speed_series(run, costs, replay.BIN_MS / 1e3)
            per.setdefault((run.variant, run.rate), []).append(summary(series))
    print(f"{argv[0]} against {', '.join(argv[1:])}: bins of {replay.BIN_MS:g} ms\n")
    print(
        "| variant | offered/s | runs | speed (median) | sd of log (median, max) | "
        "lag-1 autocorrelation | bins in a spell (median, max) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for (variant, rate), got in sorted(per.items()):
        speed = statistics.median(g[0] for g in got)
        sd = [g[1] for g in got]
        acf = statistics.median(g[2] for g in got)
        spells = [g[3] for g in got]
        print(
            f"| {variant} | {rate:.0f} | {len(got)} | {speed:.2f} | "
            f"{statistics.median(sd):.3f}, {max(sd):.3f} | {acf:+.2f} | "
            f"{statistics.median(spells):.2f}, {max(spells):.2f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
