"""The forty-first round: do two grids of one hour differ by more than their repeats do?

For each hour with two grids and each compare.py figure below both grids' knees (self_check.py's
cells: p50, p99 and goodput per variant and level), Welch's statistic on the logarithms of the
repeats' values: ``t = (mean_a - mean_b) / sqrt(s_a^2 / n_a + s_b^2 / n_b)``. If the two grids
measured the same truth and differed only by their repeats' spread, ``|t|`` would exceed the
t distribution's two-sided 5 % point in about 5 % of figures. Welch's degrees of freedom lie
between ``min(n_a, n_b) - 1`` and ``n_a + n_b - 2``, so each figure is held against the point
at both (:data:`T975`; with 3 repeats a side 4.303 and 2.776, with 10 2.262 and 2.101): above
the first is an excess under any degrees of freedom, above the second under the most. Many
more than 5 % means the hour's truth moved between two grids run minutes apart: drift that
more repeats of one grid cannot remove. Figures whose repeats are all equal on both sides
(goodput at light load) have no statistic and are left out.

Run, from the repository root:
  PYTHONPATH=bench/calibrate .venv/bin/python docs/results/calibration/round41/drift.py \
    HOST A:B [A:B ...]
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

from compare import load_runs
from self_check import below_knee, cells

T975 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    12: 2.179,
    14: 2.145,
    16: 2.120,
    18: 2.101,
    20: 2.086,
    30: 2.042,
}
"""The t distribution's two-sided 5 % points by degrees of freedom (a table's; the largest
tabled degrees of freedom not above the asked ones is used, which errs high)."""


def t975(df: int) -> float:
    return T975[max(k for k in T975 if k <= df)]


def welch(xs: tuple[float, ...], ys: tuple[float, ...]) -> float | None:
    """Welch's t on the logarithms; None when neither side varies."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    se2 = statistics.variance(lx) / len(lx) + statistics.variance(ly) / len(ly)
    if se2 == 0:
        return None
    return (statistics.fmean(lx) - statistics.fmean(ly)) / math.sqrt(se2)


def main(argv: list[str]) -> int:
    host, pairs = argv[0], [p.split(":") for p in argv[1:]]
    print(f"### {host}: Welch's t between the two grids of an hour, per figure below both knees")
    print()
    print(
        "| grids | figures | repeats a side | abs(t) over the point at the most degrees of "
        "freedom | at the fewest | median abs(t) |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    every: list[tuple[float, bool, bool]] = []
    for a, b in pairs:
        la, lb = below_knee(cells(load_runs(Path(a)))), below_knee(cells(load_runs(Path(b))))
        ts: list[tuple[float, bool, bool]] = []
        sizes: set[int] = set()
        for k in la:
            if k not in lb:
                continue
            for f in la[k]:
                xs, ys = la[k][f].xs, lb[k][f].xs
                if min(len(xs), len(ys)) < 2 or min(xs + ys) <= 0:
                    continue
                t = welch(xs, ys)
                if t is not None:
                    most = abs(t) > t975(len(xs) + len(ys) - 2)
                    fewest = abs(t) > t975(min(len(xs), len(ys)) - 1)
                    ts.append((abs(t), most, fewest))
                    sizes.add(min(len(xs), len(ys)))
        every += ts
        print(
            f"| {Path(a).name}, {Path(b).name} | {len(ts)} | {min(sizes)} | " + counted(ts) + " |"
        )
    print("| all | " + f"{len(every)} | | " + counted(every) + " |")
    return 0


def counted(ts: list[tuple[float, bool, bool]]) -> str:
    """The table's last three cells: past each 5 % point (how many, share), median |t|."""
    most, fewest = sum(t[1] for t in ts), sum(t[2] for t in ts)
    median = statistics.median(t[0] for t in ts)
    return f"{most} ({most / len(ts):.0%}) | {fewest} ({fewest / len(ts):.0%}) | {median:.2f}"


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
