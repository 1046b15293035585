"""A neighbour's cores over a run, read off lab grids: ``host.busy_run_cores`` for the simulator
(the twenty-ninth round, docs/results/calibration.md).

On this shared host most runs see next to nothing of the rest of the host, and a few see a
neighbour's 0.1-0.7 cores for the whole run (the lab names them *disturbed*). The file's
``busy_cores`` carries the median run's; near the knee the few are what makes a runaway run, and
the lab's mean takes them in. The simulator draws a run's extra cores once per run from
``host.busy_run_cores`` and adds them to ``busy_cores``.

**Rule.** Over every run of the grids (every variant and level), the run's *other* cores
(``server.other_cores``: the host's CPU beyond the server's and the lab's processes, plus steal,
over the measurement window; lanes.lab.host_noise) less their median over the runs, floored at 0,
is the run's extra; its quantiles at :data:`PROBABILITIES` are the points. The median is taken
off because ``busy_cores`` (compare.py rule 1: the median run's) already carries it.

Run:  python bench/calibrate/neighbour.py GRID [GRID ...] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

PROBABILITIES = (0.0, 0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 1.0)
"""Where the quantile function is read (both ends, as the simulator requires)."""


def others(grid: Path) -> list[float]:
    """Every run's ``server.other_cores`` in ``grid`` (runs without the reading are skipped)."""
    out = []
    for f in sorted(grid.glob("runs/*/L*-r*.json")):
        if f.name.endswith(".trace.json"):
            continue
        cores = (json.loads(f.read_text()).get("server") or {}).get("other_cores")
        if cores is not None:
            out.append(float(cores))
    return out


def busy_run_cores(grids: list[Path]) -> tuple[list[tuple[float, float]], int, float]:
    """``(points, runs, median)``: the quantile points of the runs' extra cores (rule above),
    how many runs they were read off, and the median taken off."""
    cores = [c for g in grids for c in others(g)]
    if len(cores) < 2:
        raise FileNotFoundError(
            f"{', '.join(map(str, grids))}: fewer than two runs with server.other_cores"
        )
    median = statistics.median(cores)
    extra = [max(0.0, c - median) for c in cores]
    quantiles = np.quantile(extra, PROBABILITIES)  # linear between order statistics
    points = [(p, round(float(q), 4)) for p, q in zip(PROBABILITIES, quantiles, strict=True)]
    return points, len(cores), median


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("grids", type=Path, nargs="+", help="lanes bench run --out folders")
    ap.add_argument("--json", type=Path, help="write the points and what they came from here")
    args = ap.parse_args(argv)
    try:
        points, runs, median = busy_run_cores(args.grids)
    except FileNotFoundError as e:
        print(f"neighbour: {e}", file=sys.stderr)
        return 2
    if args.json:
        doc = {"busy_run_cores": points, "runs": runs, "median_other_cores": median}
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    line = ", ".join(f"[{p}, {c}]" for p, c in points)
    print(f"# {runs} runs, other cores' median {median:.4f} taken off")
    print(f"busy_run_cores = [{line}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
