"""A call's wall time against its CPU, lab and simulator (the twenty-second round): per level
and model, the lab's mean wall time and mean CPU of its batches of one (timelines.json's
``mean_ms`` and ``cpu_mean_ms``) over the grids given, beside the simulator's mean call and
mean cost for the same size (``batches``' ``call_ms`` and ``call_cost_ms``) on the scenario,
with the ratio of each. Under ``independent`` the lab's short calls hardly wait while its long
ones wait more than processor sharing makes them.

Run from bench/calibrate:
  python ../../docs/results/calibration/round22/call_walls.py SCENARIO VARIANT GRID [GRID ...]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from against_demo import GRID_AS_SIMULATED
from compare import scenario_rate
from default_question import with_threads

from lanes import sim
from lanes._core import parse_policy
from lanes.sim.scenario import Scenario

MODELS = ("char_cnn", "line_rnn_en", "line_rnn_zh")
LEVELS = (200, 400, 600, 800, 900)
SEEDS = (1, 2)
REQUESTS = 30_000


def main(argv: list[str]) -> int:
    scenario, variant, grids = Scenario.load(argv[0]), argv[1], [Path(g) for g in argv[2:]]
    by_level: dict[int, list[dict]] = {}
    for grid in grids:
        for key, run in json.loads((grid / "timelines.json").read_text()).items():
            if key.startswith(variant + "/"):
                by_level.setdefault(int(key.split("/L")[1].split("-")[0]), []).append(run)
    policy, threads = GRID_AS_SIMULATED[variant]
    sc = with_threads(scenario, threads)
    print(f"{variant}: batches of one, mean wall / mean CPU ms (wall over CPU), lab and simulated")
    print("| offered/s | " + " | ".join(f"{m} lab | {m} sim" for m in MODELS) + " |")
    print("|---:|" + "---:|---:|" * len(MODELS))
    for level, rate in enumerate(LEVELS):
        res = sim.run(sc, [parse_policy(policy)], [rate / scenario_rate(sc)], seeds=SEEDS,
                      requests=REQUESTS)  # fmt: skip
        row = [f"{rate}"]
        for m in MODELS:
            cells = [r["models"][m]["1"] for r in by_level[level] if "1" in r["models"][m]]
            n = sum(c["batches"] for c in cells)
            wall = sum(c["mean_ms"] * c["batches"] for c in cells) / n
            cpu = sum(c["cpu_mean_ms"] * c["batches"] for c in cells) / n
            sizes = [p["services"][m]["batches"]["1"] for p in res.points]
            s_wall = statistics.mean(s["call_ms"] for s in sizes)
            s_cost = statistics.mean(s["call_cost_ms"] for s in sizes)
            row.append(f"{wall:.2f} / {cpu:.2f} ({wall / cpu:.2f}x)")
            row.append(f"{s_wall:.2f} / {s_cost:.2f} ({s_wall / s_cost:.2f}x)")
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
