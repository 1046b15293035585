"""`lanes serve`'s default policy (`auto`) in the isolation lab: per model and level, the p99 of
one variant over another's in the same repeat, as null.py computes them (the mean log-ratio over
repeats with its 95 % t interval, as a ratio, and the repeats a ±10 % interval would need), for
`default` ÷ `independent-cpu2` (issue 15's bound), `fair-2-wide` ÷ `independent-cpu2` (the
setting the default runs, started by bench/zoo_paths/serve.py) and `default` ÷ `fair-2-wide`
(the two should be one server).

    python docs/results/isolation/default/ratios.py FOLDER...
"""

from __future__ import annotations

import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "null"))
from null import p99, runs, table

PAIRS = (
    ("default", "independent-cpu2"),
    ("fair-2-wide", "independent-cpu2"),
    ("default", "fair-2-wide"),
)


def main(folders: list[str]) -> None:
    rows: dict[tuple[str, int, str], list[float]] = defaultdict(list)
    worst: dict[tuple[str, int], list[float]] = defaultdict(list)
    for folder in folders:
        found = runs(Path(folder))
        for top, bottom in PAIRS:
            for (variant, level, repeat), load in found.items():
                other = found.get((top, level, repeat))
                if variant != bottom or other is None:
                    continue
                logs = {m: math.log(p99(other, m)) - math.log(p99(load, m)) for m in load["models"]}
                for model, x in logs.items():
                    rows[(f"{top} ÷ {bottom}", level, model)].append(x)
                worst[(f"{top} ÷ {bottom}", level)].append(max(logs.values()))
    table(rows, worst)
    means = defaultdict(list)
    for (what, _, _), logs in rows.items():
        means[what].append(math.exp(statistics.mean(logs)))
    for what, xs in means.items():
        print(f"\n{what}: per model and level {min(xs):.2f}-{max(xs):.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
