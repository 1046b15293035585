"""The simulator's p99 as the lab takes it: per 5 s window, over many windows.

For each grid variant at 600-900 req/s on cpu-2core.toml, 30 seeds of a run as long as a lab
window (the rate x 5 s / 0.95 requests: the simulator measures after its first 5 %), each seed's
p99 against the p99 of 3 seeds x 40,000 requests: their mean, median, min and max. The lab's
levels there hold runs ten times their repeats' p99 (round 23); a simulator whose windows spread
as little as this does not make them. With grids given, the same for the lab's runs pooled over
them: each level's runs' p99, their median, min and max, how many exceed twice the median, and
the simulated long run against the median.

Run from bench/calibrate:  PYTHONPATH=. python ../../docs/results/calibration/round23/window.py
                           [GRID ...]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from against_demo import GRID_AS_SIMULATED
from compare import scenario_rate
from default_question import DEFAULT_SCENARIO, with_threads

from lanes._core import parse_policy
from lanes.sim import runner as sim
from lanes.sim.scenario import Scenario

SEEDS = 30


LEVELS = {600: "L2", 800: "L3", 900: "L4"}
"""Round 18's experiment's level index at each rate."""


def lab(grids: list[Path], variant: str, rate: int) -> list[float]:
    """The p99 of every run of ``variant`` at ``rate`` in ``grids``, ascending."""
    return sorted(
        json.loads(f.read_text())["load"]["latency_ms"]["p99"]
        for g in grids
        for f in g.glob(f"runs/{variant}/{LEVELS[rate]}-r*.json")
        if not f.name.endswith(".trace.json")
    )


def main(argv: list[str]) -> int:
    grids = [Path(a) for a in argv]
    scenario = Scenario.load(DEFAULT_SCENARIO)
    per_load = scenario_rate(scenario)
    print(f"{DEFAULT_SCENARIO.name}: p99 ms of {SEEDS} windows of 5 s against 3 x 40,000 requests")
    print()
    head = "| variant | offered/s | long run | windows: mean | median | min | max | max / median |"
    rule = "|---|---:|---:|---:|---:|---:|---:|---:|"
    if grids:
        head += " lab runs | median | min | max | max / median | > 2x median | long run / median |"
        rule += "---:|---:|---:|---:|---:|---:|---:|"
    print(head)
    print(rule)
    for variant in ("default", "fifo", "independent", "sjf"):
        policy, threads = GRID_AS_SIMULATED[variant]
        policy = parse_policy(policy)
        sc = with_threads(scenario, threads)
        for rate in (600, 800, 900):
            load = rate / per_load
            long = sim.run(sc, [policy], [load], seeds=[1, 2, 3], requests=40_000)
            lp = statistics.mean(p["latency_ms"]["p99"] for p in long.points)
            seeds = list(range(1, SEEDS + 1))
            win = sim.run(sc, [policy], [load], seeds=seeds, requests=int(rate * 5 / 0.95))
            ps = sorted(p["latency_ms"]["p99"] for p in win.points)
            med = statistics.median(ps)
            row = (
                f"| {variant} | {rate} | {lp:.1f} | {statistics.mean(ps):.1f} | {med:.1f} | "
                f"{ps[0]:.1f} | {ps[-1]:.1f} | {ps[-1] / med:.1f} |"
            )
            if grids and (xs := lab(grids, variant, rate)):
                m = statistics.median(xs)
                row += (
                    f" {len(xs)} | {m:.1f} | {xs[0]:.1f} | {xs[-1]:.1f} | {xs[-1] / m:.1f} | "
                    f"{sum(x > 2 * m for x in xs)} | {100 * (lp / m - 1):+.0f} % |"
                )
            print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
