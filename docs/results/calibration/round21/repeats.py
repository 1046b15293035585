"""Each repeat's p99 on grids run back to back with different arrival seeds (the twenty-first
round): per variant and rate, the p99 of every repeat of each grid.

Run:  python repeats.py GRID_A GRID_B   (each a lanes bench run --out folder)
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path


def p99s(grid: Path) -> dict[tuple[str, float], list[float]]:
    out: dict[tuple[str, float], list[tuple[int, float]]] = defaultdict(list)
    for path in grid.glob("runs/*/L*-r*.json"):
        if path.name.endswith(".trace.json"):
            continue
        run = json.loads(path.read_text())
        key = (run["variant"], float(run["offered"]["rate_rps"]))
        out[key].append((run["repeat"], run["load"]["latency_ms"]["p99"]))
    return {k: [p for _, p in sorted(v)] for k, v in out.items()}


def main(argv: list[str]) -> int:
    a, b = (Path(x) for x in argv)
    pa, pb = p99s(a), p99s(b)
    print(f"| variant | offered/s | p99 ms by repeat, {a.name} | p99 ms by repeat, {b.name} |")
    print("|---|---:|---|---|")
    for key in sorted(pa):
        if key in pb:
            fa = ", ".join(f"{p:.1f}" for p in pa[key])
            fb = ", ".join(f"{p:.1f}" for p in pb[key])
            print(f"| {key[0]} | {key[1]:.0f} | {fa} | {fb} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
