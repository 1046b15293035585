"""Where the figures up to the knee miss (the thirty-ninth round): over against_demo.py markdowns,
per figure and offered rate the figures counted (the levels each summary line lists) and those
more than 15 % off, short and long; then per variant and rate the median and mean of the p99's
relative error over every level of every table, counted or not.

Run:  python where.py TABLE.md [TABLE.md ...]
"""

from __future__ import annotations

import collections
import statistics
import sys
from pathlib import Path

FIGURES = (("p50", 3), ("p99", 5), ("goodput", 7))
"""Each figure's error column in compare.table's rows (0-based, after the leading '|')."""
TARGET = 15.0


def rows(text: str) -> list[list[str]]:
    """The table's data rows as cells."""
    out = []
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| variant"):
            out.append([c.strip() for c in line.strip().strip("|").split("|")])
    return out


def counted(text: str) -> dict[str, set[float]]:
    """Per variant, the rates its summary line counts."""
    out = {}
    for line in text.splitlines():
        if line.startswith("- "):
            variant = line[2:].split(" (")[0]
            rates = line.split("(")[1].split(" req/s")[0].split(", ")
            out[variant] = {float(r) for r in rates}
    return out


def error(cell: str) -> float | None:
    return None if cell == "n/a" else float(cell.replace(" %", ""))


def main(argv: list[str]) -> int:
    total: collections.Counter[tuple[str, int]] = collections.Counter()
    short: collections.Counter[tuple[str, int]] = collections.Counter()
    long: collections.Counter[tuple[str, int]] = collections.Counter()
    p99: dict[tuple[str, int], list[float]] = collections.defaultdict(list)
    for name in argv:
        text = Path(name).read_text()
        levels = counted(text)
        for cells in rows(text):
            variant, rate = cells[0], float(cells[1])
            e99 = error(cells[5])
            if e99 is not None:
                p99[(variant, int(rate))].append(e99)
            if rate not in levels.get(variant, set()):
                continue
            for figure, col in FIGURES:
                e = error(cells[col])
                if e is None:
                    continue
                key = (figure, int(rate))
                total[key] += 1
                short[key] += e < -TARGET
                long[key] += e > TARGET
    print("| figure | req/s | counted | short by more than 15 % | long by more than 15 % |")
    print("|---|---:|---:|---:|---:|")
    for key in sorted(total):
        print(f"| {key[0]} | {key[1]} | {total[key]} | {short[key]} | {long[key]} |")
    print()
    print("| variant | req/s | p99 error, median | mean | tables |")
    print("|---|---:|---:|---:|---:|")
    for key in sorted(p99):
        e = p99[key]
        print(
            f"| {key[0]} | {key[1]} | {statistics.median(e):+.0f} % | "
            f"{statistics.mean(e):+.0f} % | {len(e)} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
