"""How the lab's runs spread against the simulator's windows, per policy and level (the
twenty-sixth round): is the knee's miss in the typical run or in the few runs that run away?

Lab: every run's p99 (the grids given, pooled). Simulator: against_demo.py's way
(GRID_AS_SIMULATED, ``--windows`` runs as long as the lab's 5 s windows), each window's p99. Per
(variant, level): the runs' count and their p99's 10th, 50th and 90th percentile, mean and
largest, beside the windows' same figures, and the share of each that runs over twice its own
median (a run that ran away).

Run from bench/calibrate, with PYTHONPATH=. :
  python ../../docs/results/calibration/round26/run_spread.py SCENARIO GRID [GRID ...]
      [--windows 100] [--rates 600,800,900] [--variants fifo,sjf,independent,default]
      [--hour-speed REFERENCE]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from against_demo import GRID_AS_SIMULATED
from compare import WARM_SHARE, scenario_rate
from default_question import with_threads
from hour_speed import at_hour, hour_speed

from lanes import sim
from lanes._core import parse_policy
from lanes.sim.scenario import Scenario

WINDOW_S = 5.0
RUNAWAY = 2.0
"""A run (or window) whose p99 is this many times its level's median ran away."""


def lab(grids: list[Path], variant: str, rate: float) -> list[float]:
    out = []
    for g in grids:
        for path in sorted((g / "runs" / variant).glob("L*-r*.json")):
            if path.name.endswith(".trace.json"):
                continue
            r = json.loads(path.read_text())
            if float(r["offered"]["rate_rps"]) == rate:
                out.append(float(r["load"]["latency_ms"]["p99"]))
    return out


def windows(sc: Scenario, variant: str, rate: float, n: int) -> list[float]:
    policy, threads = GRID_AS_SIMULATED[variant]
    s = with_threads(sc, threads)
    load = rate / scenario_rate(s)
    requests = max(1, round(rate * WINDOW_S / (1 - WARM_SHARE)))
    points = sim.run(
        s, [parse_policy(policy)], [load], seeds=list(range(1, n + 1)), requests=requests
    ).points
    return [float(p["latency_ms"]["p99"]) for p in points]


def figures(xs: list[float]) -> str:
    q = statistics.quantiles(xs, n=10, method="inclusive")
    med = statistics.median(xs)
    away = sum(x > RUNAWAY * med for x in xs) / len(xs)
    return (
        f"{q[0]:.0f} / {med:.0f} / {q[-1]:.0f} | {statistics.fmean(xs):.0f} | {max(xs):.0f} | "
        f"{away:.0%}"
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", type=Path)
    ap.add_argument("grids", type=Path, nargs="+")
    ap.add_argument("--windows", type=int, default=100)
    ap.add_argument("--rates", default="600,800,900")
    ap.add_argument("--variants", default="fifo,sjf,independent,default")
    ap.add_argument("--hour-speed", type=Path, default=None, metavar="REFERENCE")
    args = ap.parse_args()
    sc = Scenario.load(args.scenario)
    head = f"{args.scenario.name} against {len(args.grids)} grids pooled"
    if args.hour_speed is not None:
        factor = hour_speed(args.grids, args.hour_speed)
        sc = at_hour(sc, factor)
        head += f", its calls x{factor:.3f} (the hour's speed)"
    print(f"{head}; {args.windows} windows of {WINDOW_S:g} s\n")
    print(
        "| variant | offered/s | runs | lab p99 p10 / p50 / p90 | mean | max | ran away | "
        "sim p99 p10 / p50 / p90 | mean | max | ran away |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for v in args.variants.split(","):
        for rate in (float(r) for r in args.rates.split(",")):
            got = lab(args.grids, v, rate)
            if len(got) < 2:
                continue
            sim_p99 = windows(sc, v, rate, args.windows)
            print(f"| {v} | {rate:.0f} | {len(got)} | {figures(got)} | {figures(sim_p99)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
