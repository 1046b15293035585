"""The simulator's p99 as the lab measures it (the twenty-first round): the mean over 40 short
runs of the p99 of each (about 5 s of arrivals, as a lab window) against the p99 of one long
run (40,000 arrivals, 3 seeds), per variant and rate. Where a model's tails come in spells the
two differ; the lab's p99 is the former.

Run from bench/calibrate:
  PYTHONPATH=. python ../../docs/results/calibration/round21/windowed.py SCENARIO
"""

from __future__ import annotations

import sys

from against_demo import GRID_AS_SIMULATED, predicted

from lanes.sim.scenario import Scenario

WINDOW_S, SHORT_RUNS = 5.0, 40


def main(argv: list[str]) -> int:
    scenario = Scenario.load(argv[0])
    print("| variant | offered/s | p99 of one long run, ms | mean p99 of 5 s runs, ms | ratio |")
    print("|---|---:|---:|---:|---:|")
    for v in ("fifo", "sjf", "independent", "default"):
        for rate in (200.0, 400.0, 600.0, 800.0):
            long = predicted(scenario, [v], [rate], 3, 40_000, GRID_AS_SIMULATED)[(v, rate)]
            n = int(rate * WINDOW_S / 0.95)  # the simulator's first 5 % warm it up
            short = predicted(scenario, [v], [rate], SHORT_RUNS, n, GRID_AS_SIMULATED)[(v, rate)]
            ratio = short["p99"] / long["p99"]
            print(f"| {v} | {rate:.0f} | {long['p99']:.1f} | {short['p99']:.1f} | {ratio:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
