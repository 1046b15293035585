"""The forty-first round: the simulator against the lab's other grid of the same hour, per model.

The target asks each prediction to lie within 15 % of the lab's mean. A grid run minutes later
on the same host, on fresh arrivals, is a prediction no model can beat on average: it *is* the
measurement, taken again. For each hour with two grids, each grid is predicted twice, per
variant, level (400, 600, 800 req/s) and model p99:

- by the committed file scaled to the grid's hour against grid 157 (as round 29's by_model.py
  and the judges do: 100 windows of the grid's measurement window, each variant as
  against_demo.py ``--grid`` sets it), and
- by the hour's other grid: the mean over its repeats of each run's per-model p99.

Each error is ``prediction / lab - 1`` against the grid's own mean over its repeats. Printed per
host: for each variant, level and model, the median error over the grids and how many grids
each predictor misses by more than 15 % (short, long); and the totals.

Beside them, per hour, the figures *no single value* can meet on both grids: a prediction is
within 15 % of a mean ``m`` when it lies in ``[0.85 m, 1.15 m]``, and the two grids' intervals
share no value when the larger mean exceeds the smaller by more than ``1.15 / 0.85`` (1.353x).
Counted for the compare.py figures (p50, p99 and goodput of each variant and level below both
grids' knees, self_check.py's cells) and for the per-model p99s above, with each grid's hour
speed against grid 157 (the one input the file takes from the grid it predicts) beside them.

Run, from the repository root:
  PYTHONPATH=bench/calibrate:docs/results/calibration/round29 .venv/bin/python \
    docs/results/calibration/round41/pairs.py HOST A:B [A:B ...]
  (A and B: the two grid folders of one hour; HOST: a heading)
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

from by_model import REFERENCE, SCENARIO, lab, simulated
from compare import load_runs
from hour_speed import at_hour, hour_speed
from self_check import below_knee, cells

from lanes.sim.scenario import Scenario

RATES = (400.0, 600.0, 800.0)
APART = 1.15 / 0.85
Key = tuple[str, float, str]


def apart(x: float, y: float) -> bool:
    """No value lies within 15 % of both ``x`` and ``y``."""
    return max(x, y) > APART * min(x, y)


def misses(errors: list[float]) -> tuple[int, int]:
    """How many errors are short and long by more than 15 %."""
    return sum(e < -0.15 for e in errors), sum(e > 0.15 for e in errors)


def main(argv: list[str]) -> int:
    host, pairs = argv[0], [p.split(":") for p in argv[1:]]
    base = Scenario.load(SCENARIO)
    errs: dict[str, dict[Key, list[float]]] = {"sim": defaultdict(list), "lab": defaultdict(list)}
    hours = []
    for a, b in pairs:
        grids = {g: load_runs(Path(g)) for g in (a, b)}
        figures = {g: lab(runs) for g, runs in grids.items()}
        speeds = {g: hour_speed([Path(g)], REFERENCE) for g in (a, b)}
        la, lb = below_knee(cells(grids[a])), below_knee(cells(grids[b]))
        both = [(k, f) for k in la if k in lb for f in la[k]]
        split = [(k, f) for k, f in both if apart(la[k][f].mean, lb[k][f].mean)]
        models = [k for k in figures[a] if k[1] in RATES and k in figures[b]]
        split_m = [k for k in models if apart(figures[a][k], figures[b][k])]
        hours.append((a, b, speeds, len(both), split, len(models), len(split_m)))
        for g, other in ((a, b), (b, a)):
            window_s = statistics.median(r["measure_s"] for r in grids[g])
            pred = simulated(at_hour(base, speeds[g]), window_s)
            for key, value in figures[g].items():
                if key[1] not in RATES or key not in pred or key not in figures[other]:
                    continue
                errs["sim"][key].append(pred[key] / value - 1)
                errs["lab"][key].append(figures[other][key] / value - 1)
    print(f"### {host}: {len(pairs)} hours, {2 * len(pairs)} grids, each model's p99")
    print()
    print(
        "| variant | req/s | model | file: median error | file: short, long | "
        "other grid: median error | other grid: short, long |"
    )
    print("|---|---:|---|---:|---:|---:|---:|")
    for key in sorted(errs["sim"]):
        row = []
        for side in ("sim", "lab"):
            es = errs[side][key]
            short, long_ = misses(es)
            row += [f"{statistics.median(es):+.0%}", f"{short}, {long_} of {len(es)}"]
        variant, rate, model = key
        print(f"| {variant} | {rate:g} | {model} | " + " | ".join(row) + " |")
    print()
    for side, name in (("sim", "the file"), ("lab", "the hour's other grid")):
        every = [e for es in errs[side].values() for e in es]
        short, long_ = misses(every)
        ok = len(every) - short - long_
        print(f"- {name}: {ok} of {len(every)} cells within 15 % ({short} short, {long_} long)")
    print()
    print("Figures no single value meets within 15 % on both grids of the hour (means more than")
    print(f"{APART:.3f}x apart):")
    print()
    print(
        "| grids | hour speed vs grid 157 | compare.py figures below both knees | "
        "of them apart | which | per-model p99 cells | of them apart |"
    )
    print("|---|---:|---:|---:|---|---:|---:|")
    for a, b, speeds, n, split, n_m, split_m in hours:
        which = ", ".join(f"{v} {r:g} {f}" for (v, r), f in split) or "-"
        print(
            f"| {Path(a).name}, {Path(b).name} | {speeds[a]:.3f}, {speeds[b]:.3f} | {n} | "
            f"{len(split)} | {which} | {n_m} | {split_m} |"
        )
    n = sum(h[3] for h in hours)
    apart_n = sum(len(h[4]) for h in hours)
    n_m, apart_m = sum(h[5] for h in hours), sum(h[6] for h in hours)
    print(f"| all | | {n} | {apart_n} | | {n_m} | {apart_m} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
