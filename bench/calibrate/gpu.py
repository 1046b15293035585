"""Predicted vs measured on a GPU host: ``lanes sim`` on a GPU scenario against a GPU lab run.

compare.py calibrates this project's 2-core CPU host, where the devices are the same cores as
everything else and a fitted term stands for the server's CPU. A GPU host needs none of that:
its scenario (``examples/scenarios/gpu-h200-graphs.toml``) takes every figure from the GPU run's
own files (device costs from its timelines, CPU work and wake-ups from its request spans,
``eta`` from kernel_time's overlap test), and nothing from its latencies. This script simulates
the same policies at the same offered rates as the results folders' runs, as they are (no fit),
and prints compare.py's table: per variant and rate the measured p50, p99 and goodput (mean over
repeats, with the repeats' range) beside the simulated (mean over seeds) and the relative error,
and its summary below the knee (measured goodput at least 90 % of the offer) against issue 15's
15 % target.

Run:  python bench/calibrate/gpu.py RESULTS [RESULTS ...] [--scenario F] [--markdown OUT.md]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from compare import ROOT, emit, load_runs, measured, predicted, summary, table  # beside this file

from lanes.lab.experiment import load_experiment
from lanes.serving.config import ServeConfig
from lanes.sim.scenario import Scenario
from lanes.sim.sweep import canonical_policies

DEFAULT_SCENARIO = ROOT / "examples" / "scenarios" / "gpu-h200-graphs.toml"
DEFAULT_POLICY = ServeConfig().policy


def policies(folders: list[Path]) -> dict[str, str]:
    """Each variant's ``--policy`` argument, from the folders' experiment.toml (``lanes serve``'s
    default where a command gives none)."""
    out: dict[str, str] = {}
    for folder in folders:
        for variant in load_experiment(folder / "experiment.toml").variants:
            command = list(variant.command)
            given = "--policy" in command
            out[variant.name] = command[command.index("--policy") + 1] if given else DEFAULT_POLICY
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, nargs="+", help="lanes bench run results folders")
    ap.add_argument("--scenario", type=Path, default=DEFAULT_SCENARIO)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=60_000)
    ap.add_argument("--markdown", type=Path, help="also write the table here")
    args = ap.parse_args(argv)
    runs = [r for folder in args.results for r in load_runs(folder)]
    scenario = Scenario.load(args.scenario)
    meas = measured(runs)
    policy = {v: canonical_policies([p])[0] for v, p in policies(args.results).items()}
    variants = sorted({k[0] for k in meas})
    rates = sorted({k[1] for k in meas})
    by_policy = predicted(scenario, [policy[v] for v in variants], rates, args.seeds, args.requests)
    pred = {(v, rate): by_policy[(policy[v], rate)] for v in variants for rate in rates}
    head = (
        f"`{args.scenario.name}` against {', '.join(str(f) for f in args.results)} "
        f"({len(runs)} runs; {args.seeds} seeds x {args.requests:,} requests a point)\n\n"
    )
    return emit(head + table(meas, pred) + "\n" + summary(meas, pred), args.markdown)


if __name__ == "__main__":
    sys.exit(main())
