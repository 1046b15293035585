"""How far do single runs' per-model p99s spread, in the lab and in the simulator? The thirtieth
round's diagnostic, on the committed copies of every grid of this host state (rounds 25-29).

For each grid and level ``RATE``, the lab's runs of ``fifo`` and ``sjf`` (each run's own
per-model p99) and the simulator's windows (the scenario scaled to the grid's hour against grid
157, 100 windows of the grid's measurement window, each variant as against_demo.py ``--grid``
sets it; each window's per-model p99), pooled over the grids. Printed per variant and model: the
10th to 97th percentiles and the mean of the runs' and of the windows' p99s.

Run, from the repository root:
  PYTHONPATH=bench/calibrate .venv/bin/python docs/results/calibration/round30/spread.py \
    SCENARIO RATE
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import numpy as np
from against_demo import GRID_AS_SIMULATED
from compare import WARM_SHARE, load_runs, scenario_rate
from default_question import with_threads
from hour_speed import at_hour, hour_speed

from lanes import sim
from lanes._core import parse_policy
from lanes.sim.scenario import Scenario

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "round29"))
from by_model import GRIDS, REFERENCE, WINDOWS

QS = (0.1, 0.25, 0.5, 0.75, 0.9, 0.97)
VARIANTS = ("fifo", "sjf")


def main(argv: list[str]) -> int:
    base, rate = Scenario.load(argv[0]), float(argv[1])
    lab: dict[tuple[str, str], list[float]] = {}
    simulated: dict[tuple[str, str], list[float]] = {}
    for grid in GRIDS:
        runs = load_runs(grid)
        window_s = statistics.median(r["measure_s"] for r in runs)
        at = at_hour(base, hour_speed([grid], REFERENCE))
        for v in VARIANTS:
            for r in runs:
                if r["variant"] == v and r["offered"]["rate_rps"] == rate:
                    for m, x in r["load"]["models"].items():
                        lab.setdefault((v, m), []).append(x["latency_ms"]["p99"])
            policy, threads = GRID_AS_SIMULATED[v]
            sc = with_threads(at, threads)
            n = max(1, round(rate * window_s / (1 - WARM_SHARE)))
            seeds = list(range(1, WINDOWS + 1))
            load = rate / scenario_rate(sc)
            points = sim.run(sc, [parse_policy(policy)], [load], seeds=seeds, requests=n).points
            for p in points:
                for m, x in p["services"].items():
                    simulated.setdefault((v, m), []).append(x["latency_ms"]["p99"])
    cols = " / ".join(f"p{round(q * 100)}" for q in QS)
    print(f"{rate:g} req/s, {len(GRIDS)} grids; {argv[0]}")
    print()
    print(f"| variant | model | lab runs' p99: {cols} | mean | simulated windows' p99 | mean |")
    print("|---|---|---:|---:|---:|---:|")
    for key in sorted(lab):
        a, b = np.quantile(lab[key], QS), np.quantile(simulated[key], QS)
        print(
            f"| {key[0]} | {key[1]} ({len(lab[key])} runs) | "
            + " / ".join(f"{x:.0f}" for x in a)
            + f" | {np.mean(lab[key]):.0f} | "
            + " / ".join(f"{x:.0f}" for x in b)
            + f" | {np.mean(simulated[key]):.0f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
