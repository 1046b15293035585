"""A scenario per policy (the twenty-second round, part 5's lead): the calibration grid's
``fifo`` and ``sjf`` simulated on one scenario file and ``independent`` and the default on
another (the same reading with its calls made dearer by the CPU ratio policy_cpu.py measures),
set against the grids given as against_demo.py sets one scenario (pooled runs, compare.py's
table and counts; 2 seeds x 30,000 requests).

Run from bench/calibrate, with PYTHONPATH=. :
  python ../../docs/results/calibration/round22/per_policy.py SHARED OWN GRID [GRID ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

from against_demo import GRID_AS_SIMULATED, predicted
from compare import load_runs, measured, summary, table

from lanes.sim.scenario import Scenario

SEEDS, REQUESTS = 2, 30_000


def main(argv: list[str]) -> int:
    shared, own, grids = Scenario.load(argv[0]), Scenario.load(argv[1]), map(Path, argv[2:])
    runs = [r for g in grids for r in load_runs(g) if r["variant"] in GRID_AS_SIMULATED]
    meas = measured(runs)
    rates = sorted({k[1] for k in meas})
    pred = predicted(shared, ["fifo", "sjf"], rates, SEEDS, REQUESTS, GRID_AS_SIMULATED)
    pred |= predicted(own, ["independent", "default"], rates, SEEDS, REQUESTS, GRID_AS_SIMULATED)
    print(f"fifo, sjf on {argv[0]}; independent, default on {argv[1]}\n")
    print(table(meas, pred))
    print(summary(meas, pred))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
