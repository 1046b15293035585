"""What the lab's own batches say of each model's cost curve: the thirtieth round's reading, on
the committed copies of every grid of this host state (rounds 25-29, their timelines.json).

Per model and offered rate, over the ``fifo``, ``sjf`` and default runs: the batches' mean CPU
per call at each size (timelines.py's ``cpu_mean_ms`` weighted by the cells' batches) over the
batch of one's at the same rate, for the sizes with at least 20 batches; the count in brackets.
Set them against a scenario's ``batch_ms`` over its ``gpu.mean_ms``.

Run:  python docs/results/calibration/round30/curve.py GRID [GRID ...]
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

from compare import load_runs  # beside bench/calibrate on PYTHONPATH

SIZES = (2, 3, 4, 5, 6, 8, 16)


def main(grids: list[str]) -> int:
    acc: dict[tuple[str, float, int], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for g in grids:
        timelines = json.loads((Path(g) / "timelines.json").read_text())
        rate = {r["id"]: r["offered"]["rate_rps"] for r in load_runs(Path(g))}
        for run, t in timelines.items():
            if run.startswith("independent"):
                continue
            for model, sizes in t["models"].items():
                for n, cell in sizes.items():
                    a = acc[(model, rate[run], int(n))]
                    a[0] += cell["batches"]
                    a[1] += cell["batches"] * cell["cpu_mean_ms"]
    print(f"{len(grids)} grids; a batch of n's mean CPU over the batch of one's (batches)")
    print()
    print("| model | offered/s | batch of 1, ms | " + " | ".join(f"{n}" for n in SIZES) + " |")
    print("|---|---:|---:|" + "---:|" * len(SIZES))
    for model in sorted({k[0] for k in acc}):
        for rate in sorted({k[1] for k in acc}):
            one = acc.get((model, rate, 1))
            if not one or one[0] < 50:
                continue
            c1 = one[1] / one[0]
            cells = []
            for n in SIZES:
                a = acc.get((model, rate, n))
                cells.append(f"{a[1] / a[0] / c1:.2f} ({a[0]:.0f})" if a and a[0] >= 20 else "")
            print(f"| {model} | {rate:g} | {c1:.2f} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
