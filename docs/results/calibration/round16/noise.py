"""Each same_hour.py reading's predictions against a grid's repeats, by two yardsticks (the
sixteenth round, docs/results/calibration.md): within the target (15 % of the repeats' mean),
or within the larger of that and the mean's own 95 % interval (Student's t, n - 1 degrees of
freedom, self_check.py's) — a prediction inside the lab's own noise. Levels below compare.py's
knee only.
Prints, per reading, the count and each figure out by both.

Run from bench/calibrate:
  PYTHONPATH=. python ../../docs/results/calibration/round16/noise.py GRID READING.md [...]
"""

import re
import sys
from pathlib import Path

from compare import TARGET, load_runs
from self_check import FIGURES, below_knee, cells, ci_pct


def predictions(reading: Path) -> dict[tuple[str, float], dict[str, float]]:
    """The simulated figures of a same_hour.py --markdown table."""
    out = {}
    for line in reading.read_text().splitlines():
        m = re.match(r"\| (\w+) \| (\d+) \|", line)
        if not m or "[" not in line:  # the figures' table, not --calls' (eighteenth round)
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        sim = [float(cells[i].split("/")[-1].replace(",", "")) for i in (2, 4, 6)]
        out[(m[1], float(m[2]))] = dict(zip(FIGURES, sim, strict=True))
    return out


def main(argv: list[str]) -> int:
    grid, readings = Path(argv[0]), [Path(a) for a in argv[1:]]
    measured = below_knee(cells(load_runs(grid)))
    for reading in readings:
        sim = predictions(reading)
        within = inside = total = 0
        out = []
        for key, level in measured.items():
            for x in FIGURES:
                mean, half = level[x].mean, ci_pct(list(level[x].xs)) / 100
                miss = abs(sim[key][x] - mean)
                total += 1
                within += miss <= TARGET * mean
                if miss <= max(half, TARGET) * mean:
                    inside += 1
                else:
                    err = sim[key][x] / mean - 1
                    out.append(f"{key[0]} {key[1]:.0f} {x} {err:+.0%} (±{half:.0%})")
        print(
            f"{reading.stem}: within {TARGET:.0%} {within} of {total}; within {TARGET:.0%} or "
            f"the 95 % interval {inside} of {total}; out by both: {'; '.join(out) or 'none'}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
