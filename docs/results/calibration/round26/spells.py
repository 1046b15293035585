"""The host's slow spells within a run, as runs of slow bins of the speed over time (the
twenty-sixth round): how long and how deep are they, how often do they come, and in which runs?

Each run's series is replay.speed_series (its calls' CPU per 250 ms against the scenario's cost
of the same calls). A bin is slow when its factor is at least ``--depth`` (default 1.15) times
the run's median bin; a spell is a stretch of consecutive slow bins. Per offered rate (every
variant pooled): the runs, the share of slow bins, spells per minute, their length (median,
90th percentile, longest, s) and depth (the spell's mean factor over the run's median; median
and largest); then the same split by whether the run ran away (its p99 over twice its level's
median run, per variant).

Run from bench/calibrate, with PYTHONPATH=. :
  python ../../docs/results/calibration/round26/spells.py SCENARIO GRID [GRID ...] [--depth 1.15]
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from pathlib import Path

import replay

from lanes.sim.scenario import Scenario

VARIANTS = ["fifo", "sjf", "independent", "default"]


def spells(series: list[float], depth: float) -> list[tuple[int, float]]:
    """(length in bins, mean factor over the series' median) of each run of slow bins."""
    med = statistics.median(series)
    out, cur = [], []
    for f in [*series, 0.0]:
        if f >= depth * med:
            cur.append(f / med)
        elif cur:
            out.append((len(cur), statistics.fmean(cur)))
            cur = []
    return out


def row(label: str, got: list[tuple[list[float], float]], depth: float) -> str:
    """got: (series, bin width s) per run."""
    bins = sum(len(s) for s, _ in got)
    found = [(n * w, d) for s, w in got for n, d in spells(s, depth)]
    slow = sum(n for n, _ in found) / (sum(len(s) * w for s, w in got) or 1)
    minutes = sum(len(s) * w for s, w in got) / 60
    if not found:
        return f"| {label} | {len(got)} | {bins} | 0 % | 0 | | |"
    lengths = sorted(n for n, _ in found)
    depths = [d for _, d in found]
    p90 = lengths[min(len(lengths) - 1, int(0.9 * len(lengths)))]
    return (
        f"| {label} | {len(got)} | {bins} | {slow:.1%} | {len(found) / minutes:.1f} | "
        f"{statistics.median(lengths):.2f} / {p90:.2f} / {lengths[-1]:.2f} | "
        f"{statistics.median(depths):.2f} / {max(depths):.2f} |"
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", type=Path)
    ap.add_argument("grids", type=Path, nargs="+")
    ap.add_argument("--depth", type=float, default=1.15)
    args = ap.parse_args()
    costs = replay.scenario_costs(Scenario.load(args.scenario))
    by_rate: dict[float, list[tuple[list[float], float]]] = defaultdict(list)
    split: dict[bool, list[tuple[list[float], float]]] = defaultdict(list)
    runs = [r for g in args.grids for r in replay.load(g, VARIANTS, None) if r.variant in VARIANTS]
    medians = {
        key: statistics.median(r.p99 for r in runs if (r.variant, r.rate) == key)
        for key in {(r.variant, r.rate) for r in runs}
    }
    for r in runs:
        got = replay.speed_series(r, costs, replay.BIN_MS / 1e3)
        by_rate[r.rate].append(got)
        if r.rate >= 600:
            split[r.p99 > 2 * medians[(r.variant, r.rate)]].append(got)
    print(
        f"{args.scenario.name} against {len(args.grids)} grids: slow bins at {args.depth:g}x "
        f"the run's median, bins of {replay.BIN_MS:g} ms\n"
    )
    print(
        "| runs | count | bins | slow bins | spells a minute | length s (median / p90 / max) | "
        "depth (median / max) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for rate in sorted(by_rate):
        print(row(f"{rate:.0f} req/s", by_rate[rate], args.depth))
    for away in (False, True):
        label = "600-900, ran away" if away else "600-900, the others"
        print(row(label, split[away], args.depth))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
