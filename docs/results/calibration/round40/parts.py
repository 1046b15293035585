"""The fortieth round's read-out: where the tail at moderate load is short, part by part.

Reads tails.py's tables (out/tails-GRID-VARIANT.md: a grid's runs and the simulator on the
committed file, scaled to the grid's hour, at 400 and 600 req/s) and prints, per variant, rate
and model, the lab's and the simulator's measured p99, the p99 of the time inside the
scheduling path rebuilt from the device timeline, what lies outside it at p99 (measured less
inside), and the mean parts of the slowest 1 % by time inside (batcher wait, device queue,
device hold, call), each as the simulator's over the lab's, pooled over the grids given as the
mean of their ratios.

Run:  python docs/results/calibration/round40/parts.py \
          docs/results/calibration/round40/out/tails-*.md
"""

from __future__ import annotations

import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

HEAD = re.compile(r"^#### (sim )?(\w+) (\d+) req/s")
FIELDS = ("measured", "inside", "outside", "batcher", "queue", "hold", "call", "total")


def read(path: Path) -> dict[tuple[str, int, str, str], dict[str, float]]:
    """(variant, rate, model, 'lab'|'sim') -> the figures of FIELDS, from one tails.py table."""
    out: dict[tuple[str, int, str, str], dict[str, float]] = {}
    key: tuple[str, int, str] | None = None
    for line in path.read_text().splitlines():
        if m := HEAD.match(line):
            key = ("sim" if m.group(1) else "lab", int(m.group(3)), m.group(2))
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if key is None or len(cells) != 9 or not cells[1].isdigit():
            continue
        side, rate, variant = key
        inside = [float(x) for x in cells[2].split(" / ")]
        measured = [float(x) for x in cells[3].split(" / ")]
        parts = [float(x) for x in cells[4:9]]
        out[(variant, rate, cells[0], side)] = dict(
            zip(FIELDS, [measured[2], inside[2], measured[2] - inside[2], *parts], strict=True)
        )
    return out


def main(paths: list[str]) -> int:
    ratios: dict[tuple[str, int, str], dict[str, list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    lab_ms: dict[tuple[str, int, str], dict[str, list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for p in paths:
        got = read(Path(p))
        for (variant, rate, model, side), figs in got.items():
            if side != "lab" or (variant, rate, model, "sim") not in got:
                continue
            sim = got[(variant, rate, model, "sim")]
            for f in FIELDS:
                lab_ms[(variant, rate, model)][f].append(figs[f])
                if figs[f] > 0.05:
                    ratios[(variant, rate, model)][f].append(sim[f] / figs[f])
    print(f"{len(paths)} tables; each cell: the lab's ms (mean over the grids) and sim / lab")
    print("(-: no ratio, the lab's figure under 0.05 ms or negative)")
    print()
    print("| variant | req/s | model | " + " | ".join(FIELDS) + " |")
    print("|---|---:|---|" + "---:|" * len(FIELDS))
    for (variant, rate, model), by in sorted(ratios.items()):
        cells = []
        for f in FIELDS:
            ms = statistics.fmean(lab_ms[(variant, rate, model)][f])
            r = by.get(f)
            cells.append(f"{ms:.1f} ({statistics.fmean(r):.2f})" if r else f"{ms:.1f} (-)")
        print(f"| {variant} | {rate} | {model} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
