"""The runs' ``char_cnn`` p99 spread, lab against a scenario's windows: round 35's quiet.py
parts 1-2 for any scenario (the thirty-sixth round, part 3, docs/results/calibration.md).

**Rule.** As quiet.py's :func:`spread`: per variant at 600 and 800 req/s, the p10 / median /
p90 / mean of every lab run's ``char_cnn`` p99 over the fifteen grids, beside the simulator's
windows' (SCENARIO scaled to each grid's hour, 20 windows per grid and level), and what goes
with a slow lab run.

Run, from the repository root:
  PYTHONPATH=bench/calibrate .venv/bin/python docs/results/calibration/round36/spread.py SCENARIO
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "round35"))
import quiet  # round 35's spread, its scenario set here


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_file():
        print("usage: spread.py SCENARIO (a scenario file)", file=sys.stderr)
        return 2
    quiet.SCENARIO = Path(argv[0])
    print(f"Scenario: {Path(argv[0]).name}\n")
    quiet.spread()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
