"""How much of the host the rest of it took during each grid (the twenty-sixth round): per grid,
the runs' other cores (compare.others_cores: the busy cores less the server's process, so the
lab's load generators, about 0.04-0.07, and any neighbour), their median, mean and largest, the
median at 200-400 req/s, and how many runs had 0.1 cores or more.

Run from bench/calibrate, with PYTHONPATH=. :
  python ../../docs/results/calibration/round26/others.py GRID [GRID ...]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from compare import load_runs, others_cores


def main(argv: list[str]) -> int:
    print(
        "| grid | runs | other cores median | mean | max | median at 200-400 req/s | runs >= 0.1 |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for grid in argv:
        runs = load_runs(Path(grid))
        xs = [others_cores(r) for r in runs]
        light = [others_cores(r) for r in runs if r["offered"]["rate_rps"] <= 400]
        print(
            f"| {Path(grid).name} | {len(xs)} | {statistics.median(xs):.3f} | "
            f"{statistics.fmean(xs):.3f} | {max(xs):.2f} | {statistics.median(light):.3f} | "
            f"{sum(x >= 0.1 for x in xs)} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
