"""The lab's runs one by one: how far a short model's p99 spreads from run to run, what goes
with a slow run, and the file judged on the quiet runs alone (the thirty-fifth round,
docs/results/calibration.md).

The lab's figure at a level is the mean over its repeats; the simulator's the mean over windows.
If some runs are slow for a reason the simulator does not model, the mean carries them.

**Rule.**
1. **Spread.** Per variant at 600 and 800 req/s, over every run of the fifteen grids
   (sensitivity.py's list): the p10 / median / p90 / mean of the runs' ``char_cnn`` p99, beside
   the simulator's windows' (the file scaled to each grid's hour, :data:`WINDOWS` windows per
   grid and level).
2. **What goes with it.** Pearson r of the run's log ``char_cnn`` p99 with the rest of the
   host's CPU over its window (``server.other_cores``: other processes and the hypervisor's
   steal, lanes.lab.host_noise), with the steal alone, with the host's idle share and with the
   client's send delay p99.
3. **Quiet runs.** Each grid's figures again over its runs with ``other_cores`` below
   :data:`QUIET` only, set against the simulator's (sensitivity.py's JSON at m = 1), for the
   levels below the knee: the median over the grids of sim / lab - 1, and how many grids
   within 15 %, with and without the other runs.

Run, from the repository root (after sensitivity.py wrote out/sensitivity-calls.json; about a
minute):
  PYTHONPATH=bench/calibrate .venv/bin/python docs/results/calibration/round35/quiet.py
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from against_demo import GRID_AS_SIMULATED
from compare import KNEE, load_runs
from hour_speed import at_hour, hour_speed

from lanes.sim.scenario import Scenario

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from sensitivity import GRIDS, REFERENCE, SCENARIO, lab, points_at  # noqa: E402

QUIET = 0.02
"""A run is quiet when the rest of the host took less than this many cores over its window."""
RATES = (600.0, 800.0)
WINDOWS = 20
SENSITIVITY = HERE / "out" / "sensitivity-calls.json"


def q(xs: list[float], p: float) -> float:
    """The p-quantile of xs (nearest rank below)."""
    s = sorted(xs)
    return s[int(p * (len(s) - 1))]


def spread() -> None:
    """Part 1 and 2 of the rule."""
    base = Scenario.load(SCENARIO)
    grids = []
    for grid in GRIDS:
        runs = load_runs(grid)
        window_s = statistics.median(r["measure_s"] for r in runs)
        grids.append((runs, window_s, at_hour(base, hour_speed([grid], REFERENCE))))
    print("#### 1-2. The runs' `char_cnn` p99, ms, and what goes with it\n")
    print(
        "| variant | offered/s | runs | lab runs p10 / median / p90 / mean | simulated windows "
        "p10 / median / p90 / mean | r(log p99, other cores) | r(…, steal) | r(…, idle) "
        "| r(…, send delay p99) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for variant in GRID_AS_SIMULATED:
        for rate in RATES:
            rows = []
            simulated: list[float] = []
            for runs, window_s, scenario in grids:
                for r in runs:
                    if r["variant"] != variant or r["offered"]["rate_rps"] != rate:
                        continue
                    s = r["server"]
                    rows.append(
                        (
                            math.log(r["load"]["models"]["char_cnn"]["latency_ms"]["p99"]),
                            s.get("other_cores", 0.0),
                            s.get("steal_cpu_s", 0.0) / s["window_s"],
                            s["host_cpu_idle"],
                            r["load"]["send_delay_ms"]["p99"],
                        )
                    )
                points = points_at(scenario, variant, rate, window_s, WINDOWS)
                simulated += [p["services"]["char_cnn"]["latency_ms"]["p99"] for p in points]
            a = np.array(rows)
            lab = [math.exp(x) for x in a[:, 0]]
            cells = [
                " / ".join(f"{v:.1f}" for v in (q(xs, 0.1), q(xs, 0.5), q(xs, 0.9), np.mean(xs)))
                for xs in (lab, simulated)
            ]
            rs = " | ".join(f"{np.corrcoef(a[:, 0], a[:, i])[0, 1]:+.2f}" for i in (1, 2, 3, 4))
            print(f"| {variant} | {rate:g} | {len(lab)} | {cells[0]} | {cells[1]} | {rs} |")


def quiet_runs() -> None:
    """Part 3 of the rule."""
    data = json.loads(SENSITIVITY.read_text())
    errors: dict[tuple[str, float, str], dict[str, list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    shares = []
    for grid in GRIDS:
        g = data["grids"][grid.name]
        sim1, lab_all = g["sim"]["1.00"], g["lab"]
        runs = load_runs(grid)
        quiet = [r for r in runs if r["server"].get("other_cores", 0.0) < QUIET]
        shares.append((len(quiet), len(runs)))
        for name, measured in lab(quiet).items():
            variant, rate_s, figure = name.split("|")
            rate = float(rate_s)
            if figure.startswith("goodput") or rate not in (400.0, *RATES) or name not in sim1:
                continue
            if lab_all[f"{variant}|{rate_s}|goodput_share"] < KNEE:
                continue
            errors[(variant, rate, figure)]["quiet"].append(sim1[name] / measured - 1)
            errors[(variant, rate, figure)]["all"].append(sim1[name] / lab_all[name] - 1)
    print(
        f"\n#### 3. The file on the quiet runs (other cores < {QUIET}: "
        f"{sum(q for q, _ in shares)} of {sum(n for _, n in shares)} runs)\n"
    )
    print(
        "| variant | offered/s | figure | grids | every run: sim / lab - 1, within 15 % "
        "| quiet runs: sim / lab - 1, within 15 % |"
    )
    print("|---|---:|---|---:|---:|---:|")
    for (variant, rate, figure), e in sorted(errors.items()):
        cells = [
            f"{statistics.median(e[k]):+.0%}, {sum(abs(x) <= 0.15 for x in e[k])}"
            for k in ("all", "quiet")
        ]
        grids = len(e["quiet"])
        print(f"| {variant} | {rate:g} | {figure} | {grids} | {cells[0]} | {cells[1]} |")


def main() -> int:
    spread()
    quiet_runs()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
