"""The forty-first round's totals: out/counts.txt summed per host, the file beside the lab.

Reads the count.py lines of out/counts.txt (``NAME: K of N within 15 %, R in range, C within
15 % or the mean's 95 % CI``) and sums, per host, the lines of the file's tables
(``file-hour-on-grid-seedG.md``) and of the hour's other grid (``lab-grid-seedX-on-grid-seedG.md``)
over the grids that have both (grid 191 of round 28 ran alone in its hour and is left out).

Run:  python docs/results/calibration/round41/totals.py \
          docs/results/calibration/round41/out/counts.txt
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

LINE = re.compile(
    r"^(?P<name>\S+)\.md: (?P<k>\d+) of (?P<n>\d+) within 15 %, (?P<r>\d+) in range, "
    r"(?P<c>\d+) within 15 % or"
)
INTEL = {203, 205, 207, 211, 213, 217}


def main(argv: list[str]) -> int:
    rows: dict[tuple[str, int], tuple[int, int, int]] = {}
    for line in Path(argv[0]).read_text().splitlines():
        if not (m := LINE.match(line)):
            continue
        grid = int(m["name"].rsplit("seed", 1)[1])
        side = "lab" if m["name"].startswith("lab-") else "file"
        rows[(side, grid)] = (int(m["k"]), int(m["n"]), int(m["c"]))
    grids = sorted({g for s, g in rows if ("lab", g) in rows and ("file", g) in rows})
    print("| host | grids | predictor | within 15 % | within 15 % or the lab's 95 % CI |")
    print("|---|---:|---|---:|---:|")
    for host, pick in (("AMD EPYC", lambda g: g not in INTEL), ("Intel", lambda g: g in INTEL)):
        gs = [g for g in grids if pick(g)]
        for side, name in (("file", "the file"), ("lab", "the hour's other grid")):
            k = sum(rows[(side, g)][0] for g in gs)
            n = sum(rows[(side, g)][1] for g in gs)
            c = sum(rows[(side, g)][2] for g in gs)
            print(f"| {host} | {len(gs)} | {name} | {k} of {n} ({k / n:.0%}) | {c} ({c / n:.0%}) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
