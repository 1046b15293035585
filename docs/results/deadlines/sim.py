"""The simulator on the deadline runs (docs/results/deadlines.md, "The simulator beside the
lab"): the scenario file the calibration judges (round 27's reading of grid 157) with every
service's ``deadline_ms`` as the variant sent it (the zoo models' own 1,000 ms where none) and
the lab's 256 connections a model (``client_connections``), at the runs' offered rates, each
variant's policy as the lab ran it (against_demo.py's mapping; ``edf`` itself) and its deadline
rule (``-finish``: ``host.deadline_rule = "finish"``, as ``lanes serve --deadline-rule finish``);
the mean over 100 windows of 4 s beside the lab's figures from the runs' summaries, goodput and
p99.

Run:  PYTHONPATH=bench/calibrate python docs/results/deadlines/sim.py [--speed F] [SUMMARY ...]
      (``--speed``: the calls' cost x F, the hour's speed against grid 157; default 1)
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from against_demo import GRID_AS_SIMULATED, predicted
from hour_speed import at_hour

from lanes.sim.scenario import Scenario

HERE = Path(__file__).resolve().parent
FILE = HERE.parents[0] / "calibration" / "round27" / "scenarios" / "seed157-reading.toml"
ZOO_DEADLINE_MS = 1000.0
"""The demo zoo models' own default deadline, which applies when a request carries none."""
CONNECTIONS = 256
WINDOWS, WINDOW_S = 100, 4.0
AS_SIMULATED = {**GRID_AS_SIMULATED, "edf": ("edf", 1)}


def policy_and_deadline(variant: str) -> tuple[str, float, str]:
    """``fifo-100`` → (``fifo``, 100.0, ``start``); ``sjf`` → (``sjf``, the zoo's default,
    ``start``); ``sjf-150-finish`` → (``sjf``, 150.0, ``finish``)."""
    base, *rest = variant.split("-")
    rule = "finish" if rest[-1:] == ["finish"] else "start"
    rest = rest[:-1] if rule == "finish" else rest
    return base, float(rest[0]) if rest else ZOO_DEADLINE_MS, rule


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("summaries", nargs="*", type=Path)
    ap.add_argument("--speed", type=float, default=1.0)
    args = ap.parse_args(argv)
    summaries = args.summaries or [HERE / "run1" / "summary.json", HERE / "run2" / "summary.json"]
    base = at_hour(Scenario.load(FILE), args.speed)
    print(
        f"{FILE.name}, its calls x{args.speed:g}, every service {CONNECTIONS} connections; "
        f"{WINDOWS} windows of {WINDOW_S:g} s\n"
    )
    print("| run | variant | offered req/s | goodput lab / sim | p99 ms lab / sim |")
    print("|---|---|---:|---:|---:|")
    for path in summaries:
        s = json.loads(path.read_text())
        for name, v in s["variants"].items():
            policy, deadline, rule = policy_and_deadline(name)
            services = tuple(
                replace(x, deadline_ms=deadline, client_connections=CONNECTIONS)
                for x in base.services
            )
            host = replace(base.host, deadline_rule=rule)
            scenario = replace(base, host=host, services=services)
            rates = [float(lv["offered_rps"]) for lv in v["levels"]]
            got = predicted(scenario, [policy], rates, WINDOWS, 0, AS_SIMULATED, window_s=WINDOW_S)
            for lv in v["levels"]:
                p = got[(policy, float(lv["offered_rps"]))]
                print(
                    f"| {path.parent.name} | {name} | {lv['offered_rps']:.0f} "
                    f"| {lv['goodput_rps']:.0f} / {p['goodput']:.0f} "
                    f"| {lv['latency_ms']['p99']:.0f} / {p['p99']:.0f} |"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
