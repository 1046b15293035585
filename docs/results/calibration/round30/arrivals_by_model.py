"""Do the short models' tails at the knee come back with the lab's own arrivals? The thirtieth
round's diagnostic, on grids kept with their request traces (round 29's, in /tmp/r29).

For each run of ``--variants`` at ``--rates``: the lab's per-model p99 (the run's own), and the
simulator's (the mean over ``--seeds``) on the scenario scaled to the grid's hour (hour_speed.py
against grid 157, as judge_all.sh does) under two arrivals: **poisson** at the run's offered rate,
and **arrivals**: each model's requests arriving when they arrived at the server in that run
(replay.with_arrivals: the ``front`` spans' starts, as trace arrivals at their own rate), one
pass of the trace. Also each run's arrivals' index of dispersion (variance over mean of the
counts in 5 ms bins; 1 for Poisson). Printed per (variant, rate, model): the means over repeats
and each form's ``sim / lab - 1``.

Run, from the repository root (R: docs/results/calibration/round30):
  PYTHONPATH=bench/calibrate .venv/bin/python $R/arrivals_by_model.py SCENARIO GRID [GRID...] \
    [--variants sjf,fifo] [--rates 600,800] [--seeds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

import numpy as np
from against_demo import GRID_AS_SIMULATED
from compare import scenario_rate
from default_question import with_threads
from hour_speed import at_hour, hour_speed
from replay import Run, arrivals, with_arrivals

from lanes import sim
from lanes._core import parse_policy
from lanes.sim.scenario import Scenario

C = Path(__file__).resolve().parents[1]
REFERENCE = C / "round27/grid-seed157"
BIN_S = 0.005


def dispersion(times: list[float]) -> float:
    """Variance over mean of the arrival counts in :data:`BIN_S` bins."""
    counts = np.bincount((np.asarray(times) / BIN_S).astype(int))[:-1]
    return float(counts.var() / counts.mean())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario", type=Path)
    ap.add_argument("grids", type=Path, nargs="+")
    ap.add_argument("--variants", default="sjf,fifo")
    ap.add_argument("--rates", default="600,800")
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args(argv)
    rates = [float(r) for r in args.rates.split(",")]
    base = Scenario.load(args.scenario)
    rows: dict[tuple[str, float, str], dict[str, list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    seeds = list(range(1, args.seeds + 1))
    for grid in args.grids:
        sc0 = at_hour(base, hour_speed([grid], REFERENCE))
        for variant in args.variants.split(","):
            policy, threads = GRID_AS_SIMULATED[variant]
            name = parse_policy(policy)
            for path in sorted((grid / "runs" / variant).glob("L*-r*.json")):
                if path.name.endswith(".trace.json"):
                    continue
                result = json.loads(path.read_text())
                rate = float(result["offered"]["rate_rps"])
                if rate not in rates:
                    continue
                trace = json.loads(path.with_name(path.stem + ".trace.json").read_text())
                p99 = float(result["load"]["latency_ms"]["p99"])
                run = Run(f"{variant}/{path.stem}", variant, rate, p99, arrivals(trace), ())
                every = sorted(t for ts in run.arrivals.values() for t in ts)
                replayed, replay_rate = with_arrivals(sc0, run)
                forms = {
                    "poisson": (sc0, rate, round(rate * every[-1])),
                    "arrivals": (replayed, replay_rate, len(every)),
                }
                for form, (sc, r, n) in forms.items():
                    sc = with_threads(sc, threads)
                    points = sim.run(sc, [name], [r / scenario_rate(sc)], seeds=seeds, requests=n)
                    for svc in sc.services:
                        p99 = [p["services"][svc.name]["latency_ms"]["p99"] for p in points.points]
                        rows[(variant, rate, svc.name)][form].append(statistics.fmean(p99))
                for model, m in result["load"]["models"].items():
                    rows[(variant, rate, model)]["lab"].append(m["latency_ms"]["p99"])
                    rows[(variant, rate, model)]["dispersion"].append(dispersion(every))
    print(
        "| variant | offered/s | model | runs | arrivals' dispersion (5 ms) | lab p99 ms "
        "| sim p99, Poisson | sim p99, the run's arrivals |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for (variant, rate, model), f in sorted(rows.items()):
        lab = statistics.fmean(f["lab"])
        cells = [f"{statistics.fmean(f[k]):.1f} ({statistics.fmean(f[k]) / lab - 1:+.0%})"
                 for k in ("poisson", "arrivals")]  # fmt: skip
        print(
            f"| {variant} | {rate:g} | {model} | {len(f['lab'])} | "
            f"{statistics.fmean(f['dispersion']):.2f} | {lab:.1f} | {cells[0]} | {cells[1]} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
