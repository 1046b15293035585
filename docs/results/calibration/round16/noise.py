"""Each same_hour.py reading's predictions against a grid's repeats, by two yardsticks (the
sixteenth round, docs/results/calibration.md): within the target (15 % of the repeats' mean),
or within the larger of that and the mean's own 95 % interval (Student's t, n - 1 degrees of
freedom) — a prediction inside the lab's own noise. Levels below compare.py's knee only.
Prints, per reading, the count and each figure out by both.

Run from bench/calibrate:
  PYTHONPATH=. python ../../docs/results/calibration/round16/noise.py GRID READING.md [...]
"""

import math
import re
import statistics
import sys
from pathlib import Path

from compare import KNEE, TARGET, load_runs

T975 = {2: 12.706, 3: 4.303, 4: 3.182, 5: 2.776, 6: 2.571, 7: 2.447, 8: 2.365}
"""Student's t at 0.975 by the number of repeats (n - 1 degrees of freedom)."""
FIGURES = ("p50", "p99", "goodput")


def repeats(grid: Path) -> dict[tuple[str, float], list[dict[str, float]]]:
    """(variant, offered req/s) → each repeat's p50, p99 and goodput."""
    out: dict[tuple[str, float], list[dict[str, float]]] = {}
    for run in load_runs(grid):
        load = run["load"]
        key = (run["variant"], float(run["offered"]["rate_rps"]))
        p50, p99 = load["latency_ms"]["p50"], load["latency_ms"]["p99"]
        out.setdefault(key, []).append({"p50": p50, "p99": p99, "goodput": load["goodput_rps"]})
    return out


def predictions(reading: Path) -> dict[tuple[str, float], dict[str, float]]:
    """The simulated figures of a same_hour.py --markdown table."""
    out = {}
    for line in reading.read_text().splitlines():
        m = re.match(r"\| (\w+) \| (\d+) \|", line)
        if not m:
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        sim = [float(cells[i].split("/")[-1].replace(",", "")) for i in (2, 4, 6)]
        out[(m[1], float(m[2]))] = dict(zip(FIGURES, sim, strict=True))
    return out


def main(argv: list[str]) -> int:
    grid, readings = Path(argv[0]), [Path(a) for a in argv[1:]]
    measured = repeats(grid)
    for reading in readings:
        sim = predictions(reading)
        within = inside = total = 0
        out = []
        for key, reps in sorted(measured.items()):
            mean = {x: statistics.mean(r[x] for r in reps) for x in FIGURES}
            if mean["goodput"] < KNEE * key[1]:
                continue
            for x in FIGURES:
                values = [r[x] for r in reps]
                half = T975[len(values)] * statistics.stdev(values) / math.sqrt(len(values))
                miss = abs(sim[key][x] - mean[x])
                total += 1
                within += miss <= TARGET * mean[x]
                if miss <= max(half, TARGET * mean[x]):
                    inside += 1
                else:
                    err = sim[key][x] / mean[x] - 1
                    out.append(f"{key[0]} {key[1]:.0f} {x} {err:+.0%} (±{half / mean[x]:.0%})")
        print(
            f"{reading.stem}: within {TARGET:.0%} {within} of {total}; within {TARGET:.0%} or "
            f"the 95 % interval {inside} of {total}; out by both: {'; '.join(out) or 'none'}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
