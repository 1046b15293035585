"""The speed probe's spread within a run, by level, grid by grid: round 31's sign that this
session's machine is not the earlier grids' host.

Each lab run carries its speed probe (lanes.lab.speed_probe: a fixed piece of work timed on its
thread's CPU clock every 0.1 s). Per run, the standard deviation of the log of its samples over
their median; per grid and level, the median of that over every variant's runs.

Run:  .venv/bin/python docs/results/calibration/round31/probe_spread.py GRID [GRID ...]
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path


def spread(run: Path) -> float:
    samples = [w for _, w in json.loads(run.read_text())["speed_probe"]["series"]]
    mid = statistics.median(samples)
    return statistics.pstdev(math.log(w / mid) for w in samples)


def main(grids: list[str]) -> int:
    for grid in map(Path, grids):
        cells = []
        for level in range(5):
            runs = sorted(grid.glob(f"runs/*/L{level}-r?.json"))
            if runs:
                cells.append(f"{statistics.median(spread(r) for r in runs):.3f}")
        print(f"{grid.name}: sd of log within a run by level {' '.join(cells)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
