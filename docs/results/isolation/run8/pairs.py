"""Per repeat, each model's p99 against the baseline's in the same repeat and level, and the
worst of them; per variant and level the mean with its 95 % t interval over every repeat of the
runs given (sim.md, "A fast lane that fits the host"). Repeats are paired by number within a
run folder: the lab interleaves a repeat's variants.

    python docs/results/isolation/run8/pairs.py docs/results/isolation/run7 \
        docs/results/isolation/run8 [--baseline independent-cpu2]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

T95 = {
    1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26,
    10: 2.23, 11: 2.20, 12: 2.18, 13: 2.16, 14: 2.14, 15: 2.13, 16: 2.12, 17: 2.11, 18: 2.10,
    19: 2.09, 20: 2.09, 25: 2.06, 30: 2.04,
}  # fmt: skip
"""Student's t, two-sided 95 %, by degrees of freedom."""


def t95(df: int) -> float:
    """Student's t for ``df`` degrees of freedom, or for the nearest tabled df below it (wider)."""
    return T95[max(k for k in T95 if k <= df)]


def runs(folder: Path) -> dict[tuple[str, int, int], dict[str, Any]]:
    """(variant, level, repeat) -> the run's load block."""
    out = {}
    for f in sorted(folder.glob("runs/*/L*-r*.json")):
        if f.name.endswith(".trace.json"):
            continue
        r = json.loads(f.read_text())
        out[(r["variant"], r["level"], r["repeat"])] = r["load"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", type=Path, nargs="+")
    ap.add_argument("--baseline", default="independent-cpu2")
    args = ap.parse_args()
    worst: dict[tuple[str, int], list[float]] = defaultdict(list)
    model: dict[tuple[str, int, str], list[float]] = defaultdict(list)
    for folder in args.folders:
        found = runs(folder)
        for (variant, level, repeat), load in found.items():
            base = found.get((args.baseline, level, repeat))
            if variant == args.baseline or base is None:
                continue
            ratios = {
                m: b["latency_ms"]["p99"] / base["models"][m]["latency_ms"]["p99"]
                for m, b in load["models"].items()
            }
            worst[(variant, level)].append(max(ratios.values()))
            for m, x in ratios.items():
                model[(variant, level, m)].append(x)
    print(f"| variant | level | repeats | worst x {args.baseline} [95 % CI] | per model, mean |")
    print("|---|---:|---:|---|---|")
    for (variant, level), xs in sorted(worst.items()):
        mean = statistics.fmean(xs)
        half = t95(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else 0
        per = ", ".join(
            f"{m} {statistics.fmean(v):.2f}"
            for (var, lv, m), v in sorted(model.items())
            if (var, lv) == (variant, level)
        )
        print(
            f"| `{variant}` | L{level} | {len(xs)} | {mean:.2f} [{mean - half:.2f}, "
            f"{mean + half:.2f}] | {per} |"
        )


if __name__ == "__main__":
    main()
