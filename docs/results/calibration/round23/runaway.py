"""The runaway runs near the knee: what they share.

A run is *runaway* when its p99 exceeds twice the median p99 of its variant and level over the
grids given (600-900 req/s, levels 2-4 of round 18's experiment). For them, against the other
runs at those levels:

- **arrivals**: every variant of a grid's (level, repeat) is sent the same arrivals (round 21),
  so runaway runs made by the arrival sample would share (grid, level, repeat) cells; printed:
  the cells holding two or more, and how many such pairs chance alone would give (the runaway
  runs dropped at random into that many runs, four variants a cell);
- **neighbours**: the run files' host noise (``other_cores``, ``steal_cpu_s``; grids run since
  lanes.lab.host_noise only);
- **the host's speed**: each run's mean CPU of ``char_cnn``'s and ``line_rnn_zh``'s calls of one
  (timelines.json, ``cpu_mean_ms``) over the median of its grid and level.

Run:  python runaway.py GRID [GRID ...]   (grids with timelines.json, from timelines.py)
"""

from __future__ import annotations

import collections
import json
import statistics
import sys
from math import comb
from pathlib import Path
from typing import Any

LEVELS = (2, 3, 4)


def main(argv: list[str]) -> int:
    if not argv:
        sys.exit(__doc__.split("Run:")[1].strip())
    runs: list[dict[str, Any]] = []
    for grid in map(Path, argv):
        if not (grid / "timelines.json").is_file():
            sys.exit(f"runaway: {grid} has no timelines.json: run timelines.py on it first")
        timelines = json.loads((grid / "timelines.json").read_text())
        for path in sorted(grid.glob("runs/*/L*-r*.json")):
            if path.name.endswith(".trace.json"):
                continue
            run = json.loads(path.read_text())
            if run["level"] not in LEVELS:
                continue
            models = (timelines.get(run["id"]) or {}).get("models", {})
            run["_grid"] = grid.name
            run["_cpu"] = {m: models.get(m, {}).get("1", {}).get("cpu_mean_ms") for m in models}
            runs.append(run)
    by_level: dict[tuple[str, int], list[float]] = collections.defaultdict(list)
    for r in runs:
        by_level[(r["variant"], r["level"])].append(r["load"]["latency_ms"]["p99"])
    median = {k: statistics.median(v) for k, v in by_level.items()}
    away = [
        r for r in runs if r["load"]["latency_ms"]["p99"] > 2 * median[(r["variant"], r["level"])]
    ]
    rest = [r for r in runs if r not in away]
    print(f"{len(away)} runaway runs of {len(runs)} at levels {LEVELS}")
    cells = collections.Counter((r["_grid"], r["level"], r["repeat"]) for r in away)
    shared = {c: n for c, n in cells.items() if n > 1}
    pairs = sum(comb(n, 2) for n in shared.values())
    chance = comb(len(away), 2) * 3 / max(1, len(runs) - 1)
    print(
        f"arrivals: cells with 2 or more: {shared or 'none'}; pairs {pairs}, by chance {chance:.1f}"
    )
    noisy = [r for r in away if r.get("server", {}).get("other_cores") is not None]
    if noisy:
        worst = max(r["server"]["other_cores"] for r in noisy)
        steal = sum(r["server"].get("steal_cpu_s") or 0.0 for r in noisy)
        print(
            f"neighbours: {len(noisy)} with host noise read, other at most {worst:.3f} cores, "
            f"steal {steal:.2f} s in all"
        )
    for model in ("char_cnn", "line_rnn_zh"):
        base: dict[tuple[str, int], list[float]] = collections.defaultdict(list)
        for r in runs:
            if r["_cpu"].get(model):
                base[(r["_grid"], r["level"])].append(r["_cpu"][model])
        mid = {k: statistics.median(v) for k, v in base.items()}

        def ratios(rs: list[dict[str, Any]], m: str = model, mid: dict = mid) -> list[float]:
            return sorted(
                r["_cpu"][m] / mid[(r["_grid"], r["level"])] for r in rs if r["_cpu"].get(m)
            )

        a, b = ratios(away), ratios(rest)
        print(
            f"{model}'s calls of one, CPU over their grid and level's median: runaway median "
            f"{statistics.median(a):.3f} ({sum(x > 1.05 for x in a)} of {len(a)} above 1.05), "
            f"others {statistics.median(b):.3f} ({sum(x > 1.05 for x in b)} of {len(b)})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
