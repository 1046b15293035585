"""Runs whose request spans lack a model for a while (the twenty-first round, part 7): per run,
each model's longest gap between consecutive arrivals at the server (request spans' ``front``)
inside the measured window, and the runs where some model's exceeds ``GAP_MS`` (at 600 req/s
and up, a Poisson gap that long for the smallest model is beyond chance).

Run:  python gaps.py GRID
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

GAP_MS = 300.0


def longest_gaps(trace: dict) -> dict[str, float]:
    model_of = {
        ev["id"]: ev["name"]
        for ev in trace["traceEvents"]
        if ev.get("cat") == "request" and ev.get("ph") == "b" and "args" in ev
    }
    other = trace["otherData"]
    lo, hi = ((t - other["origin_unix_s"]) * 1e3 for t in other["window_unix"])
    times: dict[str, list[float]] = {}
    for ev in trace["traceEvents"]:
        if ev.get("cat") == "request" and ev.get("ph") == "b" and ev.get("name") == "front":
            model = model_of.get(ev["id"])
            if model is not None:
                times.setdefault(model, []).append(ev["ts"] / 1e3)
    out = {}
    for model, ts in times.items():
        edges = [lo, *sorted(t for t in ts if lo <= t <= hi), hi]
        out[model] = max(b - a for a, b in itertools.pairwise(edges))
    return out


def main(argv: list[str]) -> int:
    grid = Path(argv[0])
    runs = sorted(grid.glob("runs/*/L*-r*.trace.json"))
    bad = 0
    for path in runs:
        gaps = longest_gaps(json.loads(path.read_text()))
        worst = max(gaps.values())
        if worst > GAP_MS:
            bad += 1
            shown = ", ".join(f"{m} {g:.0f} ms" for m, g in sorted(gaps.items()))
            print(f"{path.parent.name}/{path.name.removesuffix('.trace.json')}: {shown}")
    print(f"{bad} of {len(runs)} runs lack a model for over {GAP_MS:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
