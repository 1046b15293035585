"""The host's speed as host_speed.py reads it, off the lab's calls and off the simulator's: the
thirtieth round's check that a speed process read off the calls' wall time is not counted twice.

host_speed.py's rule (the excess variance of windows' mean log-slowdown over independent
draws, fitted to a process of ``speed_cv`` and ``speed_ms``) applied to the ``fifo`` and ``sjf``
runs of a grid kept with its request traces at one level, on the calls' wall time
(``measured_ms``) and on their CPU (``cpu_ms``); and to the simulator's device timelines of
the same variants and rate (the scenario scaled to the grid's hour against grid 157, one
timeline per seed as long as a lab run), on the calls' wall time (``end_ms - called_ms``). The
simulator's wall time carries its own sharing of the cores and its preemption draws; what the
lab's wall-time reading exceeds it by is what the scenario's speed process has to give.

Run, from the repository root:
  PYTHONPATH=bench/calibrate .venv/bin/python docs/results/calibration/round30/sim_speed.py \
    GRID LEVEL RATE SCENARIO [SCENARIO ...] [--seeds 6]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from compare import WARM_SHARE, load_runs, scenario_rate
from host_speed import read_runs, sim_events
from hour_speed import at_hour, hour_speed

from lanes import sim
from lanes.sim.scenario import Scenario

C = Path(__file__).resolve().parents[1]
REFERENCE = C / "round27/grid-seed157"
VARIANTS = ("fifo", "sjf")


def read(runs: list[list[dict[str, Any]]], cpu: bool = False) -> str:
    """host_speed.py's fit over ``runs`` (each a list of trace events)."""
    f = read_runs(runs, cpu=cpu)
    return f"speed_cv {f.speed_cv:.3f}, speed_ms {f.speed_ms:.0f}"


def simulated(scenario: Scenario, variant: str, rate: float, seed: int, n: int) -> list[dict]:
    """One simulated timeline as trace events host_speed.py reads (µs, measured batches)."""
    _, spans = sim.timeline(scenario, variant, rate / scenario_rate(scenario), seed, n)
    return sim_events(spans)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("grid", type=Path)
    ap.add_argument("level", type=int)
    ap.add_argument("rate", type=float)
    ap.add_argument("scenarios", type=Path, nargs="+")
    ap.add_argument("--seeds", type=int, default=6)
    args = ap.parse_args(argv)
    lab = [
        json.loads(p.read_text())["traceEvents"]
        for v in VARIANTS
        for p in sorted((args.grid / "runs" / v).glob(f"L{args.level}-r*.trace.json"))
    ]
    print(f"{args.grid.name}, level {args.level} ({args.rate:g} req/s), {len(lab)} lab runs:")
    print(f"- the lab, calls' wall time: {read(lab)}")
    print(f"- the lab, calls' CPU: {read(lab, cpu=True)}")
    window_s = statistics.median(r["measure_s"] for r in load_runs(args.grid))
    n = round(args.rate * window_s / (1 - WARM_SHARE))
    factor = hour_speed([args.grid], REFERENCE)
    for path in args.scenarios:
        sc = at_hour(Scenario.load(path), factor)
        runs = [
            simulated(sc, v, args.rate, seed, n)
            for v in VARIANTS
            for seed in range(1, args.seeds + 1)
        ]
        print(f"- simulated, calls' wall time, {path.name}: {read(runs)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
