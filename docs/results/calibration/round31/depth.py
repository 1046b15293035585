"""The speed spells' depth by load, the lab's against the simulator's: the thirty-first round's
reading for ``host.speed_cv_busy``.

At every level of a grid kept with its request traces, host_speed.py's rule (round30/sim_speed.py)
on the ``fifo`` and ``sjf`` runs' calls' wall time, the lab's and, for each scenario, the
simulator's own timelines of the same variants and rate (the scenario scaled to the grid's hour
against grid 157, one timeline per seed as long as a lab run), with the simulator's utilisation
of the cores there (1 - ``cpu_idle``, mean over those timelines). A scenario's misfit is the
root mean square of its reading less the lab's over the levels the lab was read at (a grid kept
without its request traces gives the simulator's column alone); the table is Markdown.

Run, from the repository root:
  PYTHONPATH=bench/calibrate .venv/bin/python docs/results/calibration/round31/depth.py \
    GRID SCENARIO [SCENARIO ...] [--seeds 6] [--markdown OUT]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path
from typing import Any

from compare import WARM_SHARE, load_runs, scenario_rate
from host_speed import read_runs, sim_events
from hour_speed import at_hour, hour_speed

from lanes import sim
from lanes.sim.scenario import Scenario

REFERENCE = Path(__file__).resolve().parents[1] / "round27/grid-seed157"
VARIANTS = ("fifo", "sjf")


def lab_levels(grid: Path) -> list[tuple[int, float]]:
    """The grid's (level index, offered rate) pairs, from its run files."""
    return sorted({(r["level"], float(r["offered"]["rate_rps"])) for r in load_runs(grid)})


def lab_cv(grid: Path, level: int) -> float | None:
    """The lab's speed_cv read off its ``fifo`` and ``sjf`` calls' wall time at ``level`` (None:
    the grid was kept without its request traces)."""
    runs = [
        json.loads(p.read_text())["traceEvents"]
        for v in VARIANTS
        for p in sorted((grid / "runs" / v).glob(f"L{level}-r*.trace.json"))
    ]
    return read_runs(runs).speed_cv if runs else None


def sim_cv(sc: Scenario, rate: float, seeds: int, n: int) -> tuple[float, float]:
    """The simulator's speed_cv off its calls' wall time at ``rate``, and its utilisation."""
    runs: list[list[dict[str, Any]]] = []
    busy: list[float] = []
    for v in VARIANTS:
        for seed in range(1, seeds + 1):
            point, spans = sim.timeline(sc, v, rate / scenario_rate(sc), seed, n)
            busy.append(1 - point["cpu_idle"])
            runs.append(sim_events(spans))
    return read_runs(runs).speed_cv, statistics.fmean(busy)


def cell(cv: float | None) -> str:
    return "—" if cv is None else f"{cv:.3f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("grid", type=Path)
    ap.add_argument("scenarios", type=Path, nargs="+")
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--markdown", type=Path)
    args = ap.parse_args(argv)
    levels = lab_levels(args.grid)
    lab = {lv: lab_cv(args.grid, lv) for lv, _ in levels}
    window_s = statistics.median(r["measure_s"] for r in load_runs(args.grid))
    factor = hour_speed([args.grid], REFERENCE)
    head = "| file | " + " | ".join(f"{rate:g} req/s" for _, rate in levels) + " | misfit |"
    lines = [
        f"{args.grid.name} (hour {factor:.3f}x grid 157): speed_cv off the calls' wall time, "
        "fifo and sjf; each simulated cell gives its cv and, in brackets, the cores' utilisation.",
        "",
        head,
        "|---|" + "---:|" * (len(levels) + 1),
        "| the lab | " + " | ".join(cell(lab[lv]) for lv, _ in levels) + " | |",
    ]
    for path in args.scenarios:
        sc = at_hour(Scenario.load(path), factor)
        cells, errs = [], []
        for lv, rate in levels:
            n = round(rate * window_s / (1 - WARM_SHARE))
            cv, u = sim_cv(sc, rate, args.seeds, n)
            cells.append(f"{cv:.3f} ({u:.2f})")
            read = lab[lv]
            if read is not None:
                errs.append((cv - read) ** 2)
        misfit = f"{math.sqrt(statistics.fmean(errs)):.4f}" if errs else "—"
        lines.append(f"| {path.stem} | " + " | ".join(cells) + f" | {misfit} |")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if args.markdown:
        args.markdown.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
