"""The median error by variant and level over the hours, file A against file B: round 31's read of
whether deeper spells remove the p99's bias at the knee, where the within-15 % count, hour by
hour, turns on the lab's own spread.

Reads judge_all.sh's tables A-hour-r*-pooled.md and B-hour-r*-pooled.md (one per hour) and prints,
per variant and offered rate, the p50 and p99 errors' median over the hours and how many hours
have the p99 within 15 %, A then B.

Run:  .venv/bin/python docs/results/calibration/round31/bias.py PREFIX_A PREFIX_B
"""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path


def errors(prefix: str) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """(variant, rate) to each hour's (p50 error, p99 error) in %."""
    out: dict[tuple[str, int], list[tuple[int, int]]] = {}
    base = Path(prefix)
    for path in sorted(base.parent.glob(base.name + "-hour-r*-pooled.md")):
        for line in path.read_text().splitlines():
            c = [x.strip() for x in line.split("|")]
            if len(c) > 8 and c[2].isdigit():
                pct = [int(re.sub(r"\s*%", "", c[j])) for j in (4, 6)]
                out.setdefault((c[1], int(c[2])), []).append((pct[0], pct[1]))
    if not out:
        raise SystemExit(f"bias: no tables {prefix}-hour-r*-pooled.md")
    return out


def main(argv: list[str]) -> int:
    a, b = errors(argv[0]), errors(argv[1])
    print(
        "| variant | offered/s | p50 err, median over hours | p99 err, median | p99 within 15 % |"
    )
    print("|---|---:|---:|---:|---:|")
    for key in sorted(a):
        ea, eb = a[key], b.get(key, [])
        p50 = [statistics.median(e[0] for e in x) for x in (ea, eb)]
        p99 = [statistics.median(e[1] for e in x) for x in (ea, eb)]
        within = [sum(abs(e[1]) <= 15 for e in x) for x in (ea, eb)]
        print(
            f"| {key[0]} | {key[1]} | {p50[0]:+.0f} → {p50[1]:+.0f} % "
            f"| {p99[0]:+.0f} → {p99[1]:+.0f} % | {within[0]} → {within[1]} of {len(ea)} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
