"""A scenario file as it is (the committed one unless ``--scenario``) against a ``lanes demo`` run
or a calibration grid: predicted vs measured p50, p99 and goodput per variant and level, the
default policy (``auto``) included.

Reads a ``lanes demo --out DIR`` folder (its grid runs, ``runs/VARIANT/L*-r*.json``; the capacity
search's probes left out) and simulates each variant the scenario models at the demo's offered
rates on the scenario (``examples/scenarios/cpu-2core.toml`` unless ``--scenario``; nothing is
read off the demo):

- ``independent-gpu-like`` as the scenario's ``independent`` (one runtime per model per core);
- ``fifo`` and ``sjf`` as themselves, one batch of each model in flight;
- ``default`` as what ``lanes serve``'s ``auto`` runs on these devices
  (lanes.serving.default_policy's ``CPU_POLICY``), every service's ``num_batch_threads`` the
  device count (2).

The demo's ``independent`` (the status quo: one executor of both cores, each model's runtime
with two intra-op threads) is not modelled by the scenario and is left out.

``--grid`` (the twentieth round): the folder is a calibration grid instead (same_hour.py's
variants, :data:`GRID_AS_SIMULATED`: ``independent``, ``fifo`` and ``sjf`` each the policy of
its name, ``default`` as above), so that a scenario file (the committed one, or one that
same_hour.py ``--write`` read off an earlier hour) is set as it is against a grid it was not
read off.

The table and the summary are compare.py's: the mean over the demo's repeats with their range,
the mean over seeds, and per variant how many figures below the knee fall within issue 15's 15 %,
and (the twenty-sixth round) how many fall within 15 % or inside the 95 % confidence interval of
the lab's mean: where the lab's own repeats spread so that its mean is known only to ±40 %, a
15 % miss cannot be told from the lab's noise, and pooling grids narrows the interval.

Several folders (the twenty-second round) pool their runs: a level's figures are the mean over
every folder's repeats, so that grids run on fresh arrival seeds judge the scenario on many
samples of arrivals, not on one grid's three.

``--without-disturbed`` (the twenty-third round) drops the runs the rest of the host disturbed
(``lanes.lab.host_noise``: other processes and steal at 0.1 cores or more over the run's
window), which measured a neighbour as much as the server; the table's heading says how many.

``--windows N`` (the twenty-fourth round) simulates each level as ``N`` runs as long as the lab's
measurement windows (the runs' median ``measure_s``) instead of ``--seeds`` long runs, and takes
the mean over them, as the lab takes the mean over its runs: the like-for-like reading when the
scenario's host speed changes over seconds (``host.speed_ms``), so that some windows run slow.

``--knee capacity`` (the thirty-ninth round) counts the figures up to the lab's own capacity at
SLO (the highest level whose runs' mean SLO attainment is at least 99 %, as lanes.lab.capacity
reads a grid) instead of every level whose goodput is at least 90 % of the offer: the knee as
the lab's headline places it, where the looser rule also counts levels past it whose p99 is
over the SLO.

``--hour-speed REFERENCE`` (the twenty-fifth round) first scales the scenario's runtime calls to
the grids' hour (hour_speed.py: their calls' CPU at the lightest level over REFERENCE's, the
grid the scenario was read off; ``--hour-levels all``: at every level the two share); the
heading gives the factor.

Run:  python bench/calibrate/against_demo.py DEMO_DIR [--scenario FILE] [--seeds 3]
      [--requests 40000] [--windows N] [--markdown OUT.md] [--without-disturbed]
      [--hour-speed REFERENCE_GRID [--hour-levels all]] [--knee goodput|capacity]
      python bench/calibrate/against_demo.py GRID [GRID ...] --grid [--scenario FILE] ...
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from compare import KNEES, emit, load_runs, measured, summary, table, undisturbed
from compare import predicted as simulate
from default_question import DEFAULT_SCENARIO, with_threads
from hour_speed import LEVELS, at_hour, hour_speed, hour_speeds

from lanes._core import parse_policy
from lanes.serving.default_policy import CPU_POLICY
from lanes.sim.scenario import Scenario

AS_SIMULATED = {
    "independent-gpu-like": ("independent", 1),
    "fifo": ("fifo", 1),
    "sjf": ("sjf", 1),
    "default": (CPU_POLICY, 2),
}
"""A demo variant → (the simulator's policy, batches of each model in flight)."""
GRID_AS_SIMULATED = {
    **{v: (v, 1) for v in ("independent", "fifo", "sjf")},
    "default": AS_SIMULATED["default"],
}
"""A calibration grid's variant → (the simulator's policy, batches of each model in flight)."""


def predicted(
    scenario: Scenario,
    variants: list[str],
    rates: list[float],
    seeds: int,
    requests: int,
    as_simulated: dict[str, tuple[str, int]] = AS_SIMULATED,
    window_s: float | None = None,
) -> dict[tuple[str, float], dict[str, float]]:
    """Each variant as ``as_simulated`` says (default :data:`AS_SIMULATED`), at the given rates:
    compare.py's prediction (mean over seeds, or over ``seeds`` windows of ``window_s``) of its
    policy on the scenario with its batches in flight."""
    out = {}
    for variant in variants:
        policy, threads = as_simulated[variant]
        policy = parse_policy(policy)  # the name the simulator's points carry
        sc = with_threads(scenario, threads)
        got = simulate(sc, [policy], rates, seeds, requests, window_s)
        out.update({(variant, rate): got[(policy, rate)] for rate in rates})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "demo",
        type=Path,
        nargs="+",
        help="a lanes demo --out folder (a grid with --grid); several pool their runs",
    )
    ap.add_argument("--scenario", type=Path, default=DEFAULT_SCENARIO)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=40_000)
    ap.add_argument(
        "--windows",
        type=int,
        default=None,
        help="simulate N runs as long as the lab's windows per level (instead of --seeds)",
    )
    ap.add_argument("--markdown", type=Path, default=None)
    ap.add_argument(
        "--grid",
        action="store_true",
        help="the folder is a calibration grid (independent, fifo, sjf, default)",
    )
    ap.add_argument(
        "--hour-speed",
        type=Path,
        default=None,
        metavar="REFERENCE",
        help="scale the scenario's calls to the grids' hour: their light-load calls' CPU over "
        "REFERENCE's, the grid the scenario was read off (hour_speed.py)",
    )
    ap.add_argument(
        "--hour-levels",
        choices=LEVELS,
        default="lightest",
        help="read --hour-speed at the grids' lightest level (default), over every level, or "
        "at each level for that level (hour_speed.py)",
    )
    ap.add_argument(
        "--knee",
        choices=KNEES,
        default="goodput",
        help="count the figures below the knee by the lab's goodput (>= 90 %% of the offer; "
        "default) or up to the lab's capacity at SLO read off the grid (compare.KNEES)",
    )
    ap.add_argument(
        "--without-disturbed",
        action="store_true",
        help="drop the runs the rest of the host disturbed (the run files' host noise)",
    )
    args = ap.parse_args(argv)
    as_simulated = GRID_AS_SIMULATED if args.grid else AS_SIMULATED
    folders = ", ".join(str(d) for d in args.demo)
    runs = [r for d in args.demo for r in load_runs(d) if r["variant"] in as_simulated]
    if not runs:
        ap.error(f"{folders} holds no runs of {', '.join(as_simulated)}")
    quiet = ""
    if args.without_disturbed:
        runs, phrase = undisturbed(runs)
        quiet = f" ({phrase})"
    meas = measured(runs)
    variants = sorted({k[0] for k in meas})
    rates = sorted({k[1] for k in meas})
    if args.windows is not None and args.windows < 1:
        ap.error(f"--windows {args.windows}: must be at least 1")
    scenario = Scenario.load(args.scenario)
    hour = ""
    if args.hour_speed is not None:
        if not args.grid:
            ap.error("--hour-speed needs --grid (the grids' timelines.json)")
        if args.hour_levels == "each":
            factors = hour_speeds(args.demo, args.hour_speed, rates)
            each = ", ".join(f"{r:g}: x{f:.3f}" for r, f in factors.items())
            hour = f", its calls scaled level by level ({each}; against {args.hour_speed})"
        else:
            factor = hour_speed(args.demo, args.hour_speed, args.hour_levels)
            scenario = at_hour(scenario, factor)
            hour = (
                f", its calls x{factor:.3f} (the hour's speed at the {args.hour_levels} "
                f"level(s) against {args.hour_speed})"
            )
    window_s = None
    sized = f"{args.seeds} seeds x {args.requests} requests"
    if args.windows is not None:
        window_s = statistics.median(r["measure_s"] for r in runs)
        sized = f"{args.windows} windows of {window_s:g} s"
    seeds = args.seeds if args.windows is None else args.windows
    if args.hour_speed is not None and args.hour_levels == "each":
        pred = {}
        for rate in rates:
            at = at_hour(scenario, factors[rate])
            pred.update(
                predicted(at, variants, [rate], seeds, args.requests, as_simulated, window_s)
            )
    else:
        pred = predicted(scenario, variants, rates, seeds, args.requests, as_simulated, window_s)
    head = (
        f"{args.scenario.name} as it is{hour} against {folders}{quiet}: "
        + ", ".join(f"{v} as {as_simulated[v][0]} x{as_simulated[v][1]}" for v in variants)
        + f"; {sized}"
    )
    return emit(f"{head}\n\n{table(meas, pred)}\n{summary(meas, pred, args.knee)}", args.markdown)


if __name__ == "__main__":
    raise SystemExit(main())
