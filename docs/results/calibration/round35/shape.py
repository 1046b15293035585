"""Each model's whole latency distribution near the knee, lab against simulator (the
thirty-fifth round, docs/results/calibration.md): is the short models' p99 miss a shift of the
whole distribution or a tail the lab has and the simulator does not?

**Rule.** For each of the fifteen grids of the earlier host (sensitivity.py's list) and each
variant at 600 and 800 req/s below the knee (the lab's mean goodput at least 90 % of the offer):
the lab's per-model p50, p90, p99, p99.9 and mean (the mean over the level's repeats of each
run's figure) and the simulator's (the committed file's source scaled to the grid's hour, as
judge_all.sh does; the mean over :data:`WINDOWS` windows of the grid's measurement window).
Printed: per variant, rate and model, the median over the grids of each, lab / simulator, and
the ratio p99.9 / p50 of those medians for both.

Run, from the repository root (about 3 minutes on this host):
  PYTHONPATH=bench/calibrate .venv/bin/python docs/results/calibration/round35/shape.py
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

from against_demo import GRID_AS_SIMULATED
from compare import KNEE, load_runs
from hour_speed import at_hour, hour_speed

from lanes.sim.scenario import Scenario

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sensitivity import GRIDS, REFERENCE, SCENARIO, points_at

RATES = (600.0, 800.0)
WINDOWS = 30
QUANTILES = ("p50", "p90", "p99", "p999", "mean")

Key = tuple[str, float, str, str]
"""(variant, rate, model, quantile)."""


def main() -> int:
    base = Scenario.load(SCENARIO)
    lab_q: dict[Key, list[float]] = defaultdict(list)
    sim_q: dict[Key, list[float]] = defaultdict(list)
    for grid in GRIDS:
        runs = [r for r in load_runs(grid) if r["variant"] in GRID_AS_SIMULATED]
        window_s = statistics.median(r["measure_s"] for r in runs)
        scenario = at_hour(base, hour_speed([grid], REFERENCE))
        acc: dict[Key, list[float]] = defaultdict(list)
        share: dict[tuple[str, float], list[float]] = defaultdict(list)
        for r in runs:
            rate = float(r["offered"]["rate_rps"])
            if rate not in RATES:
                continue
            share[(r["variant"], rate)].append(r["load"]["goodput_rps"] / rate)
            for model, m in r["load"]["models"].items():
                for q in QUANTILES:
                    acc[(r["variant"], rate, model, q)].append(m["latency_ms"][q])
        below = {k for k, xs in share.items() if statistics.fmean(xs) >= KNEE}
        for (variant, rate, model, q), xs in acc.items():
            if (variant, rate) in below:
                lab_q[(variant, rate, model, q)].append(statistics.fmean(xs))
        for variant, rate in sorted(below):
            points = points_at(scenario, variant, rate, window_s, WINDOWS)
            for svc in scenario.services:
                for q in QUANTILES:
                    xs = [p["services"][svc.name]["latency_ms"][q] for p in points]
                    sim_q[(variant, rate, svc.name, q)].append(statistics.fmean(xs))
    print(
        f"Each model's latency, ms, lab / simulator (median over the grids below the knee; "
        f"{SCENARIO.name} scaled to each grid's hour, {WINDOWS} windows a level)\n"
    )
    print("| variant | offered/s | model | grids | " + " | ".join(QUANTILES) + " | p999 / p50 |")
    print("|---|---:|---|---:|" + "---:|" * (len(QUANTILES) + 1))
    for key in sorted(k for k in lab_q if k[3] == "p50"):
        variant, rate, model, _ = key
        lab = {q: statistics.median(lab_q[(variant, rate, model, q)]) for q in QUANTILES}
        got = {q: statistics.median(sim_q[(variant, rate, model, q)]) for q in QUANTILES}
        cells = " | ".join(f"{lab[q]:.1f} / {got[q]:.1f}" for q in QUANTILES)
        tail = f"{lab['p999'] / lab['p50']:.1f} / {got['p999'] / got['p50']:.1f}"
        grids = len(lab_q[key])
        print(f"| {variant} | {rate:g} | {model} | {grids} | {cells} | {tail} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
