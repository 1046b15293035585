"""Each policy's p99 per service against ``independent``'s at the same load (mean over seeds),
the worst of them, and the mean latency against ``sjf``'s and ``independent``'s, from a
``lanes sim --json`` file that holds both (sim.md, "A wider fast lane").

    python docs/results/isolation/wide/ratios.py FILE.json
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any


def main(path: str) -> int:
    points: dict[tuple[str, float], list[dict[str, Any]]] = defaultdict(list)
    for p in json.loads(Path(path).read_text())["points"]:
        points[(p["policy"], p["load"])].append(p)

    def at(policy: str, load: float) -> tuple[dict[str, float], float]:
        pts = points[(policy, load)]
        p99 = {
            s: statistics.mean(x["services"][s]["latency_ms"]["p99"] for x in pts)
            for s in pts[0]["services"]
        }
        return p99, statistics.mean(x["latency_ms"]["mean"] for x in pts)

    print("| policy | load | " + "p99 x indep. per service | worst | mean x sjf | mean x indep. |")
    print("|---|---:|---|---:|---:|---:|")
    for policy, load in points:
        if policy in ("independent", "sjf"):
            continue
        (p99, mean), (i99, imean), (_, smean) = (
            at(policy, load),
            at("independent", load),
            at("sjf", load),
        )
        ratios = {s: p99[s] / i99[s] for s in p99}
        cells = ", ".join(f"{s} {r:.2f}" for s, r in ratios.items())
        print(
            f"| `{policy}` | {load:g} | {cells} | **{max(ratios.values()):.2f}** "
            f"| {mean / smean:.2f} | {mean / imean:.2f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
