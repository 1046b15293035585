"""Each model's p50 and p99 in the lab against the simulator, per policy and level (the
twenty-sixth round): which model carries the knee's misses, and does the simulator keep the
lab's order between ``fifo`` and ``sjf`` model by model?

Lab: each run's per-model ``latency_ms`` (``load.models``), the mean over the runs of the grids
given (pooled), and the overall p99 the same way. Simulator: against_demo.py's way
(GRID_AS_SIMULATED; ``--windows`` runs as long as the lab's 5 s windows), each service's p50 and
p99, the mean over the windows.

Run from bench/calibrate:
  python ../../docs/results/calibration/round26/per_model.py SCENARIO GRID [GRID ...]
      [--windows 100] [--rates 600,800] [--variants fifo,sjf,independent,default]
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

from against_demo import GRID_AS_SIMULATED
from compare import WARM_SHARE, scenario_rate
from default_question import with_threads

from lanes import sim
from lanes._core import parse_policy
from lanes.sim.scenario import Scenario

WINDOW_S = 5.0


def lab(grids: list[Path], variant: str, rate: float) -> dict[str, tuple[float, float]]:
    per: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for g in grids:
        for path in sorted((g / "runs" / variant).glob("L*-r*.json")):
            if path.name.endswith(".trace.json"):
                continue
            r = json.loads(path.read_text())
            if float(r["offered"]["rate_rps"]) != rate:
                continue
            lat = r["load"]["latency_ms"]
            per["all"].append((lat["p50"], lat["p99"]))
            for m, v in r["load"]["models"].items():
                per[m].append((v["latency_ms"]["p50"], v["latency_ms"]["p99"]))
    return {
        m: (statistics.fmean(a for a, _ in v), statistics.fmean(b for _, b in v))
        for m, v in per.items()
    }


def simulated(
    sc: Scenario, variant: str, rate: float, windows: int
) -> dict[str, tuple[float, float]]:
    policy, threads = GRID_AS_SIMULATED[variant]
    policy = parse_policy(policy)
    s = with_threads(sc, threads)
    load = rate / scenario_rate(s)
    n = max(1, round(rate * WINDOW_S / (1 - WARM_SHARE)))
    pts = sim.run(s, [policy], [load], seeds=list(range(1, windows + 1)), requests=n).points
    out = {
        "all": (
            statistics.fmean(p["latency_ms"]["p50"] for p in pts),
            statistics.fmean(p["latency_ms"]["p99"] for p in pts),
        )
    }
    for svc in s.services:
        out[svc.name] = (
            statistics.fmean(p["services"][svc.name]["p50"] for p in pts),
            statistics.fmean(p["services"][svc.name]["p99"] for p in pts),
        )
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", type=Path)
    ap.add_argument("grids", type=Path, nargs="+")
    ap.add_argument("--windows", type=int, default=100)
    ap.add_argument("--rates", default="600,800")
    ap.add_argument("--variants", default="fifo,sjf,independent,default")
    args = ap.parse_args()
    sc = Scenario.load(args.scenario)
    models = ["all", *(s.name for s in sc.services)]
    print(
        f"{args.scenario} against {len(args.grids)} grids pooled; {args.windows} windows of 5 s\n"
    )
    print(
        "| variant | offered/s | " + " | ".join(f"{m} p99 lab / sim (err)" for m in models) + " |"
    )
    print("|---|---:|" + "---:|" * len(models))
    for v in args.variants.split(","):
        for rate in (float(r) for r in args.rates.split(",")):
            meas, pred = lab(args.grids, v, rate), simulated(sc, v, rate, args.windows)
            cells = []
            for m in models:
                err = (pred[m][1] / meas[m][1] - 1) * 100
                cells.append(f"{meas[m][1]:.1f} / {pred[m][1]:.1f} ({err:+.0f} %)")
            print(f"| {v} | {rate:.0f} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
