"""``lanes sim``: compare scheduling policies on a simulated host, with no GPU.

Every argument is checked before anything runs (the scenario, each policy by the native module,
the loads, the output paths, matplotlib for ``--plot``); then all points run in one parallel
native call, the table goes to stdout, and ``--json`` / ``--plot`` files are written
atomically. The user guide is docs/sim.md.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from lanes.errors import BAD_ARGUMENT, LanesError

DEFAULT_SCENARIO = "ocr"
DEFAULT_POLICIES = "independent,fifo,sjf"
DEFAULT_LOADS = "0.3,0.5,0.7,0.8,0.9"
DEFAULT_SEEDS = 3
DEFAULT_REQUESTS = 200_000

_EPILOG = """\
examples:
  lanes sim                                   the built-in ocr scenario, default sweep
  lanes sim ocr --policies independent,semaphore,fifo,sjf --loads 0.5:0.9:0.1 --capacity
  lanes sim my-host.toml --seeds 5 --json out.json --plot out.png

policies: independent, semaphore (simulator modes); fifo, limit:K, sjf, edf (engine policies);
arguments follow a colon, e.g. limit:2 or sjf:alpha=0.5,slack=20. Scenario format: docs/sim.md.
"""


def register(subparsers: Any) -> None:
    """Add the ``sim`` subcommand to ``subparsers``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "sim",
        help="compare scheduling policies on a simulated host",
        description="Simulate a host where several services share GPUs, under each policy,\n"
        "at each load, with each seed; print a table of latency, SLO attainment and\n"
        "utilisation (mean over seeds). User guide: docs/sim.md.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "scenario",
        nargs="?",
        default=DEFAULT_SCENARIO,
        metavar="SCENARIO",
        help=f"a built-in scenario name or a TOML file (default: {DEFAULT_SCENARIO})",
    )
    parser.add_argument(
        "--policies",
        default=DEFAULT_POLICIES,
        metavar="LIST",
        help=f"comma-separated policies (default: {DEFAULT_POLICIES})",
    )
    parser.add_argument(
        "--loads",
        default=DEFAULT_LOADS,
        metavar="LIST",
        help="comma-separated loads, fractions of GPU capacity, and/or ranges A:B:STEP "
        f"(default: {DEFAULT_LOADS})",
    )
    parser.add_argument(
        "--seeds",
        type=int,
        default=DEFAULT_SEEDS,
        metavar="N",
        help=f"run each point with seeds 1..N and average (default: {DEFAULT_SEEDS})",
    )
    parser.add_argument(
        "--requests",
        type=int,
        default=DEFAULT_REQUESTS,
        metavar="N",
        help=f"requests simulated per point (default: {DEFAULT_REQUESTS})",
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="write all points as JSON")
    parser.add_argument(
        "--plot", type=Path, metavar="FILE.png", help="plot latency and SLO attainment vs load"
    )
    parser.add_argument(
        "--capacity",
        action="store_true",
        help="also find each policy's capacity: the highest load meeting the SLO for 99 %%",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        metavar="N",
        help="simulation threads (default: 0, all cores)",
    )
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    """Run ``lanes sim`` with parsed ``args``; errors are raised as ``LanesError``."""
    from lanes.files import check_writable
    from lanes.sim import Scenario, capacity, parse_loads, parse_policies, run, seeds_from_count
    from lanes.sim.runner import write_json
    from lanes.sim.table import print_results

    scenario = Scenario.load(args.scenario)
    policies = parse_policies(args.policies)
    loads = parse_loads(args.loads)
    seeds = seeds_from_count(args.seeds)
    if args.requests < 1:
        raise LanesError(BAD_ARGUMENT, f"--requests {args.requests}: must be at least 1")
    if args.threads < 0:
        raise LanesError(BAD_ARGUMENT, f"--threads {args.threads}: must be >= 0 (0: all cores)")
    if args.json is not None:
        check_writable(args.json, "--json")
    if args.plot is not None:
        from lanes.sim.plot import check_available

        check_writable(args.plot, "--plot")
        check_available()

    points = len(policies) * len(loads) * len(seeds)
    _progress(
        f"lanes sim {scenario.name}: {points} points ({len(policies)} policies x {len(loads)} "
        f"loads x {len(seeds)} seeds), {args.requests:,} requests each"
    )
    results = run(scenario, policies, loads, seeds, args.requests, args.threads)
    if args.capacity:
        _progress(f"lanes sim {scenario.name}: capacity of {len(policies)} policies")
        caps = capacity(scenario, policies, seeds, args.requests, args.threads)
        results = results.with_capacity(caps)

    # Files first: a closed pipe on stdout must not lose the results of a long run.
    if args.json is not None:
        command = shlex.join(["lanes", *getattr(args, "argv", ["sim"])])
        write_json(args.json, results.to_json(command))
    if args.plot is not None:
        from lanes.sim.plot import write_plot

        write_plot(results, args.plot)
    print_results(results)
    for path in (args.json, args.plot):
        if path is not None:
            print(f"wrote {path}", file=sys.stderr)
    return 0


def _progress(message: str) -> None:
    """A progress line on stderr, only for a person watching a terminal."""
    if sys.stderr.isatty():
        print(message + " ...", file=sys.stderr, flush=True)
