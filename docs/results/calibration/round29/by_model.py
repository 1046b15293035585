"""Which model's tail is short at 400-800 req/s? The twenty-ninth round's diagnostic, on the
committed copies of every grid of this host state (rounds 25-29, grids.sh's list).

For each grid, the committed file scaled to the grid's hour (hour_speed.py against grid 157, as
judge_all.sh does) is simulated as 100 windows of the grid's measurement window at each level,
each variant as against_demo.py ``--grid`` sets it; per variant, level and model the lab's p99
(the mean over the grid's repeats of each run's per-model p99) is set against the simulator's
(the mean over windows). Printed: per variant, level and model, the median over the grids of
``sim / lab - 1`` and how many grids were short by more than 15 %.

Run, from the repository root (after the rounds' grids are committed):
  PYTHONPATH=bench/calibrate .venv/bin/python docs/results/calibration/round29/by_model.py \
    [SCENARIO]   (default: the committed file's source, round27/scenarios/seed157-reading.toml)
  GRIDS="DIR ..." in the environment judges on those grids instead (round 37: this machine's),
  REFERENCE=GRID scales to their hours against that grid instead of grid 157.
"""

from __future__ import annotations

import os
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from against_demo import GRID_AS_SIMULATED
from compare import WARM_SHARE, load_runs, scenario_rate
from default_question import with_threads
from hour_speed import at_hour, hour_speed

from lanes import sim
from lanes._core import parse_policy
from lanes.sim.scenario import Scenario

C = Path(__file__).resolve().parents[1]
GRIDS = [
    C / "round25/grid-seed127", C / "round25/grid-seed131", C / "round26/grid-seed137",
    C / "round26/grid-seed139", C / "round26/grid-seed149", C / "round26/grid-seed151",
    C / "round27/grid-seed157", C / "round27/grid-seed163", C / "round27/grid-seed167",
    C / "round27/grid-seed173", C / "round28/grid-seed179", C / "round28/grid-seed181",
    C / "round28/grid-seed191", C / "round29/grid-seed193", C / "round29/grid-seed197",
]  # fmt: skip
SCENARIO = C / "round27/scenarios/seed157-reading.toml"
REFERENCE = C / "round27/grid-seed157"
RATES = (400.0, 600.0, 800.0)
WINDOWS = 100


def lab(runs: list[dict]) -> dict[tuple[str, float, str], float]:
    """(variant, rate, model) -> the mean over runs of the model's p99."""
    acc: dict[tuple[str, float, str], list[float]] = defaultdict(list)
    for r in runs:
        for model, m in r["load"].get("models", {}).items():
            acc[(r["variant"], r["offered"]["rate_rps"], model)].append(m["latency_ms"]["p99"])
    return {k: statistics.fmean(v) for k, v in acc.items()}


def simulated(scenario: Scenario, window_s: float) -> dict[tuple[str, float, str], float]:
    """(variant, rate, model) -> the mean over windows of the model's p99."""
    out = {}
    per_load = scenario_rate(scenario)
    seeds = list(range(1, WINDOWS + 1))
    for variant, (policy, threads) in GRID_AS_SIMULATED.items():
        sc = with_threads(scenario, threads)
        name = parse_policy(policy)
        for rate in RATES:
            n = max(1, round(rate * window_s / (1 - WARM_SHARE)))
            points = sim.run(sc, [name], [rate / per_load], seeds=seeds, requests=n).points
            for svc in scenario.services:
                p99 = [p["services"][svc.name]["latency_ms"]["p99"] for p in points]
                out[(variant, rate, svc.name)] = statistics.fmean(p99)
    return out


def main(argv: list[str]) -> int:
    base = Scenario.load(argv[0] if argv else SCENARIO)
    errors: dict[tuple[str, float, str], list[float]] = defaultdict(list)
    grids = [Path(g) for g in os.environ["GRIDS"].split()] if os.environ.get("GRIDS") else GRIDS
    for grid in grids:
        runs = load_runs(grid)
        window_s = statistics.median(r["measure_s"] for r in runs)
        reference = Path(os.environ.get("REFERENCE") or REFERENCE)
        pred = simulated(at_hour(base, hour_speed([grid], reference)), window_s)
        for key, value in lab(runs).items():
            if key in pred and key[1] in RATES:
                errors[key].append(pred[key] / value - 1)
    print("| variant | offered/s | model | sim / lab - 1, median over grids | grids short > 15 % |")
    print("|---|---:|---|---:|---:|")
    for (variant, rate, model), errs in sorted(errors.items()):
        short = sum(e < -0.15 for e in errs)
        print(
            f"| {variant} | {rate:g} | {model} | {statistics.median(errs):+.0%} | "
            f"{short} of {len(errs)} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
