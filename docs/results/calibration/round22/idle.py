"""The cores' idle share, lab and simulator (the twenty-second round): per variant and level,
the lab's mean idle share of the two cores (1 - the mean of ``server.cpu_busy_per_core``) over
the grids given, the simulator's (``cpu_idle``) on the scenario, and the server process's CPU
in cores.

Run from bench/calibrate:
  python ../../docs/results/calibration/round22/idle.py SCENARIO GRID [GRID ...]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from against_demo import GRID_AS_SIMULATED
from compare import load_runs, scenario_rate
from default_question import with_threads

from lanes import sim
from lanes._core import parse_policy
from lanes.sim.scenario import Scenario

LEVELS = (200, 400, 600, 800, 900)


def main(argv: list[str]) -> int:
    scenario = Scenario.load(argv[0])
    runs = [r for g in argv[1:] for r in load_runs(Path(g))]
    print("| variant | " + " | ".join(f"{r} req/s: idle lab / sim, server cores" for r in LEVELS))
    print("|---|" + "---:|" * len(LEVELS))
    for variant in ("fifo", "sjf", "independent", "default"):
        policy, threads = GRID_AS_SIMULATED[variant]
        sc = with_threads(scenario, threads)
        row = [variant]
        for rate in LEVELS:
            rs = [r for r in runs if r["variant"] == variant and r["offered"]["rate_rps"] == rate]
            idle = statistics.mean(
                1 - statistics.mean(r["server"]["cpu_busy_per_core"]) for r in rs
            )
            cores = statistics.mean(
                r["server"]["process_cpu_s"] / r["server"]["window_s"] for r in rs
            )
            point = sim.run(sc, [parse_policy(policy)], [rate / scenario_rate(sc)], seeds=[1],
                            requests=20_000).points[0]  # fmt: skip
            row.append(f"{idle:.2f} / {point['cpu_idle']:.2f}, {cores:.2f}")
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
