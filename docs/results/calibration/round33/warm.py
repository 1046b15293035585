"""A runtime call's CPU against what its executor did just before (the thirty-third round,
docs/results/calibration.md): the median `cpu_ms` of each (model, batch size) by the gap since
the same executor's previous call ended, apart for a previous call of the same model and of
another. The rule read: a call right after one of its own model's is the cheapest (warm), one
after another model's or after an idle gap of milliseconds dearer.

Run:  python warm.py GRID [VARIANT]
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

GAPS_MS = (0.0, 0.05, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, float("inf"))
"""The gap bins' edges, ms."""
CELLS = (
    ("char_cnn", 1),
    ("char_cnn", 2),
    ("line_rnn_en", 1),
    ("line_rnn_zh", 1),
    ("line_rnn_zh", 8),
)


def main(argv: list[str]) -> int:
    grid, variant = argv[0], (argv[1] if len(argv) > 1 else None)
    cells: dict[tuple[str, int, int, bool], list[float]] = defaultdict(list)
    for trace in Path(grid).glob("runs/*/L*-r*.trace.json"):
        if variant and trace.parent.name != variant:
            continue
        jobs = [e for e in json.loads(trace.read_text())["traceEvents"] if e.get("cat") == "job"]
        last: dict[int, tuple[float, str]] = {}
        for e in sorted(jobs, key=lambda e: e["ts"]):
            a = e["args"]
            if e["tid"] in last:
                end, model = last[e["tid"]]
                gap = (e["ts"] - end) / 1000
                i = next(i for i in range(len(GAPS_MS) - 1) if gap < GAPS_MS[i + 1])
                cells[(a["model"], a["batch_size"], i, model == a["model"])].append(a["cpu_ms"])
            last[e["tid"]] = (e["ts"] + e["dur"], a["model"])

    def fmt(x: list[float]) -> str:
        return f"{statistics.median(x):6.3f} ({len(x):5d})" if len(x) >= 20 else "     -        "

    for m, b in CELLS:
        print(f"{m} b={b}: median cpu_ms (n) by the gap since the executor's previous call")
        for i in range(len(GAPS_MS) - 1):
            same, other = cells.get((m, b, i, True), []), cells.get((m, b, i, False), [])
            gap = f"{GAPS_MS[i]:5g}-{GAPS_MS[i + 1]:<5g} ms"
            print(f"  {gap}  same model {fmt(same)}  other {fmt(other)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
