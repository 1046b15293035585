"""Sizes what the isolation lab can tell: the same ratios pairs.py takes, for `fair-2-wide` and for
a second run of `independent-cpu2` itself (a null comparison), each against the first run of
`independent-cpu2` in the same repeat, and `fair-2-wide` against both runs of `independent-cpu2`
(their geometric mean: the repeat's order then falls on both sides of it). Per model and level:
the mean log-ratio over repeats with its 95 % t interval, as a ratio, and how many repeats
that spread would need for an interval of ±10 %.

    python docs/results/isolation/null/null.py docs/results/isolation/null \
        [docs/results/isolation/null-rotated]

Several folders pool their repeats (each paired within its own folder); a folder without
`independent-cpu2-again` adds to the first comparison only.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run8"))
from pairs import t95

BASE, AGAIN, WIDE = "independent-cpu2", "independent-cpu2-again", "fair-2-wide"


def runs(folder: Path) -> dict[tuple[str, int, int], dict[str, Any]]:
    """(variant, level, repeat) -> the run's load block."""
    out = {}
    for f in sorted(folder.glob("runs/*/L*-r*.json")):
        if not f.name.endswith(".trace.json"):
            r = json.loads(f.read_text())
            out[(r["variant"], r["level"], r["repeat"])] = r["load"]
    return out


def p99(load: dict[str, Any], model: str) -> float:
    return float(load["models"][model]["latency_ms"]["p99"])


def interval(logs: list[float]) -> str:
    m = statistics.mean(logs)
    h = t95(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return f"{math.exp(m):.2f} [{math.exp(m - h):.2f}, {math.exp(m + h):.2f}]"


def repeats_for_10(logs: list[float]) -> int:
    """Repeats that would put the 95 % interval's half-width at 10 % (ln 1.1), with this
    spread of log-ratios (normal approximation: n = (1.96 sd / ln 1.1)^2)."""
    return math.ceil((1.96 * statistics.stdev(logs) / math.log(1.1)) ** 2)


def main(folders: list[str]) -> None:
    rows: dict[tuple[str, int, str], list[float]] = defaultdict(list)
    worst: dict[tuple[str, int], list[float]] = defaultdict(list)
    for folder in folders:
        add(runs(Path(folder)), rows, worst)
    table(rows, worst)


def add(
    found: dict[tuple[str, int, int], dict[str, Any]],
    rows: dict[tuple[str, int, str], list[float]],
    worst: dict[tuple[str, int], list[float]],
) -> None:
    """One folder's repeats, each paired within it, appended to ``rows`` and ``worst``."""
    for (variant, level, repeat), load in found.items():
        if variant != BASE:
            continue
        again, wide = found.get((AGAIN, level, repeat)), found.get((WIDE, level, repeat))
        if wide is None:
            continue
        pairs = [("fair-2-wide ÷ first", [wide], [load])]
        if again is not None:  # a folder without the null gives the first comparison only
            pairs += [
                ("null: again ÷ first", [again], [load]),
                ("fair-2-wide ÷ both", [wide], [load, again]),
            ]
        for what, top, bottom in pairs:
            logs = {}
            for model in load["models"]:
                b = statistics.mean(math.log(p99(x, model)) for x in bottom)
                logs[model] = math.log(p99(top[0], model)) - b
                rows[(what, level, model)].append(logs[model])
            worst[(what, level)].append(max(logs.values()))


def table(
    rows: dict[tuple[str, int, str], list[float]], worst: dict[tuple[str, int], list[float]]
) -> None:
    print(
        "| comparison | level | model | p99 ratio, mean over repeats [95 % CI] "
        "| repeats for ±10 % |"
    )
    print("|---|---:|---|---|---:|")
    for (what, level, model), logs in sorted(
        rows.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])
    ):
        n = repeats_for_10(logs)
        print(f"| {what} | L{level} | {model} | {interval(logs)} (n={len(logs)}) | {n} |")
    print()
    print("| comparison | level | worst model per repeat, mean [95 % CI] |")
    print("|---|---:|---|")
    for (what, level), logs in sorted(worst.items()):
        print(f"| {what} | L{level} | {interval(logs)} |")


if __name__ == "__main__":
    main(sys.argv[1:])
