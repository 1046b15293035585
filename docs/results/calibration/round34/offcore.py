"""A runtime call's time off its core when the runtimes outnumber the cores (the thirty-fourth
round, docs/results/calibration.md): under `independent` and the default each model has a runtime
per device, so up to six executor threads share the two cores, and the short models' tails at
600-800 req/s run short in the simulator on every grid of the earlier host (round 29's
by_model.py: `char_cnn` -39 to -43 % at 800 req/s).

For every call of a run's device timeline (``runs/VARIANT/L*-r*.trace.json``; a call is
``measured_ms`` ending at its slice's end, its CPU ``cpu_ms``), ``k`` is how many *other* calls
(any model, any device) were in progress at its start, and its time off its core is
``measured_ms - cpu_ms``. Printed per variant, level, model and batch size 1, by ``k``: the calls,
the median CPU, and the wall time's and the off-core time's p50 / p90 / p99, and the share of
calls that ran within 1.2x their CPU. With ``--sim SCENARIO`` the simulator's device timeline
at the same rates (the scenario as given, ``--hour-speed`` as against_demo.py) is read the same
way, its calls from ``called_ms`` to ``end_ms`` and their cost as CPU.

Run:  PYTHONPATH=bench/calibrate python offcore.py GRID [--variant independent]
        [--rates 600,800] [--sim SCENARIO [--hour-speed REF]]
"""

from __future__ import annotations

import argparse
import bisect
import json
from collections import defaultdict
from pathlib import Path

from against_demo import GRID_AS_SIMULATED
from compare import load_runs, scenario_rate
from default_question import with_threads
from hour_speed import at_hour, hour_speed

from lanes import sim
from lanes.sim.scenario import Scenario

KS = ("0", "1", "2", "3+")


def q(xs: list[float], p: float) -> float:
    """The p-quantile of xs (nearest rank)."""
    s = sorted(xs)
    return s[min(len(s) - 1, int(p * len(s)))]


def k_bin(k: int) -> str:
    return KS[min(k, 3)]


def tally(calls: list[tuple[str, int, float, float, float]], into: dict) -> None:
    """calls: (model, size, start_ms, end_ms, cpu_ms) of one run; adds each b=1 call by k."""
    starts = sorted(c[2] for c in calls)
    ends = sorted(c[3] for c in calls)
    for model, size, start, end, cpu in calls:
        if size != 1:
            continue
        # calls started at or before this start, less those already ended, less itself
        k = bisect.bisect_right(starts, start) - bisect.bisect_right(ends, start) - 1
        into[(model, k_bin(max(k, 0)))].append((end - start, cpu))


def lab_calls(trace: Path) -> list[tuple[str, int, float, float, float]]:
    jobs = [e for e in json.loads(trace.read_text())["traceEvents"] if e.get("cat") == "job"]
    out = []
    for e in jobs:
        a = e["args"]
        end = (e["ts"] + e["dur"]) / 1e3
        out.append((a["model"], a["batch_size"], end - a["measured_ms"], end, a["cpu_ms"]))
    return out


def report(title: str, cells: dict) -> None:
    print(f"#### {title}\n")
    print(
        "| model | k other calls | calls | cpu p50 | wall p50 / p90 / p99 ms | off-core p50 / p90 "
        "/ p99 ms | within 1.2x cpu |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for model in ("char_cnn", "line_rnn_en", "line_rnn_zh"):
        for k in KS:
            xs = cells.get((model, k), [])
            if len(xs) < 30:
                continue
            wall = [w for w, _ in xs]
            off = [w - c for w, c in xs]
            cpu = [c for _, c in xs]
            fast = sum(1 for w, c in xs if w <= 1.2 * c) / len(xs)
            print(
                f"| {model} | {k} | {len(xs)} | {q(cpu, 0.5):.2f} | {q(wall, 0.5):.2f} / "
                f"{q(wall, 0.9):.2f} / {q(wall, 0.99):.2f} | {q(off, 0.5):.2f} / {q(off, 0.9):.2f} "
                f"/ {q(off, 0.99):.2f} | {fast:.0%} |"
            )
    print()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("grid", type=Path)
    ap.add_argument("--variant", default="independent")
    ap.add_argument("--rates", default="600,800")
    ap.add_argument("--sim", type=Path, help="a scenario: the simulator's timelines beside")
    ap.add_argument(
        "--hour-speed", type=Path, help="scale the calls to the grid's hour against REF"
    )
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    rates = [int(r) for r in args.rates.split(",")]
    runs = [r for r in load_runs(args.grid) if r["variant"] == args.variant]
    for rate in rates:
        cells: dict = defaultdict(list)
        for r in runs:
            if round(r["offered"]["rate_rps"]) == rate:
                trace = args.grid / "runs" / f"{r['id']}.trace.json"
                tally(lab_calls(trace), cells)
        report(f"lab {args.variant} {rate} req/s", cells)
    if args.sim:
        scenario = Scenario.load(args.sim)
        if args.hour_speed:
            scenario = at_hour(scenario, hour_speed([args.grid], args.hour_speed))
        policy, threads = GRID_AS_SIMULATED[args.variant]
        scenario = with_threads(scenario, threads)
        for rate in rates:
            cells = defaultdict(list)
            for seed in range(1, args.seeds + 1):
                _, spans = sim.timeline(
                    scenario, policy, rate / scenario_rate(scenario), seed=seed, requests=20_000
                )
                tally(
                    [
                        (s["service"], int(s["size"]), s["called_ms"], s["end_ms"], s["cost_ms"])
                        for s in spans
                        if s["measured"]
                    ],
                    cells,
                )
            report(f"sim {args.variant} {rate} req/s ({args.sim.name})", cells)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
