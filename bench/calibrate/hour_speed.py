"""The hour's speed: how much dearer this grid's host ran the calls than the scenario's did.

This host's speed moves between hours by more than the calibration's 15 % target (the
twentieth, twenty-second and twenty-fifth rounds: one hour ran every call 15-25 % dearer than
the hour a scenario was read off, and the scenario then met 21 of 51 figures there). A scenario
read off one hour predicts another only once told how fast the host runs now. This reads it at
the grid's lightest level, where nothing queues, so that no latency or goodput figure the
prediction is judged on enters it.

**Rule.** Over the ``fifo`` and ``sjf`` runs at the grid's lowest offered rate, each (model,
batch size)'s runtime calls' mean CPU (timelines.py's ``cpu_mean_ms``, weighted by its
``batches``) is set against the same calls' mean CPU at the lowest rate of the *reference* grid
(the grid the scenario was read off); the hour's speed is the sum of this grid's CPU over the
sum of what the same calls took there (only pairs with at least :data:`MIN_CALLS` calls in both):
1.18 is an hour whose light-load calls took 18 % more CPU than the scenario's hour's. Both are
read at the same light load, since a call at light load runs colder (dearer) than the
scenario's costs, which are medians over every level. With ``levels="all"`` every offered rate
the two grids share enters, each (rate, model, batch size) set against the same in the
reference: the calls near the knee count too (their CPU only, still no latency figure). With
``levels="each"`` (:func:`hour_speeds`, round 38) every offered rate gets its own factor, the
same sum over that rate's (model, batch size) pairs alone, so that a level is scaled by how much
dearer this hour's calls ran at that load than the reference's at the same load; a rate the
reference lacks, or where no pair has enough calls, takes the factor over every level.
:func:`at_hour` then scales every runtime call's cost of the scenario (``gpu.mean_ms`` and each
``batch_ms`` point) by it; the server's other phases keep theirs.

Run:  python bench/calibrate/hour_speed.py GRID [GRID ...] --reference GRID [--levels all|each]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from lanes.sim.scenario import Scenario

ENGINE_RUNS = ("fifo", "sjf")
"""The variants whose calls are read: one batch of a model at a time, as the scenario's costs
(replay.py reads a grid's mean call off the same)."""
MIN_CALLS = 30
"""A (model, batch size) pair counts when the engine runs read hold this many of its calls
(here both grids', in replay.py the grid's)."""


Key = tuple[float, str, int]
"""(offered rate, or 0 for the lightest level; model; batch size)."""
LEVELS = ("lightest", "all", "each")


def engine_calls(grid: Path, levels: str = "lightest") -> dict[Key, tuple[int, float]]:
    """(rate, model, batch size) → (calls, their total CPU in ms) over the grid's ``fifo`` and
    ``sjf`` runs (its timelines.json, written by timelines.py): at its lowest offered rate (the
    key's rate 0), or with ``levels="all"`` or ``"each"`` at every rate."""
    path = grid / "timelines.json"
    if not path.is_file():
        sys.exit(f"hour_speed: {path} is missing (run timelines.py on the grid)")
    timelines = json.loads(path.read_text())
    runs = []
    for run_id in timelines:
        variant, name = run_id.split("/")
        if variant not in ENGINE_RUNS:
            continue
        result = json.loads((grid / "runs" / variant / f"{name}.json").read_text())
        runs.append((float(result["offered"]["rate_rps"]), run_id))
    if not runs:
        sys.exit(f"hour_speed: {grid} holds no fifo or sjf run in its timelines.json")
    lowest = min(rate for rate, _ in runs)
    out: dict[Key, tuple[int, float]] = {}
    for rate, run_id in runs:
        if levels == "lightest" and rate != lowest:
            continue
        at = 0.0 if levels == "lightest" else rate
        for model, sizes in timelines[run_id]["models"].items():
            for size, got in sizes.items():
                key = (at, model, int(size))
                n, cpu = out.get(key, (0, 0.0))
                out[key] = (n + got["batches"], cpu + got["batches"] * got["cpu_mean_ms"])
    return out


def _ratio(
    here: dict[Key, tuple[int, float]], there: dict[Key, tuple[int, float]]
) -> tuple[float, float]:
    """``(used, expected)``: the CPU of ``here``'s pairs with :data:`MIN_CALLS` calls in both,
    and what the same calls took in ``there``."""
    used = expected = 0.0
    for key, (n, cpu) in here.items():
        m, ref = there.get(key, (0, 0.0))
        if n >= MIN_CALLS and m >= MIN_CALLS:
            used += cpu
            expected += n * ref / m
    return used, expected


def _pooled(grids: list[Path], levels: str) -> dict[Key, tuple[int, float]]:
    """:func:`engine_calls` of several grids, their calls pooled by key."""
    here: dict[Key, tuple[int, float]] = {}
    for grid in grids:
        for key, (n, cpu) in engine_calls(grid, levels).items():
            m, total = here.get(key, (0, 0.0))
            here[key] = (m + n, total + cpu)
    return here


def hour_speed(grids: list[Path], reference: Path, levels: str = "lightest") -> float:
    """The module docs' rule: the calls' CPU of ``grids`` (several pool their calls, each grid
    at its own lowest rate) over ``reference``'s, at the lightest level or every level."""
    used, expected = _ratio(_pooled(grids, levels), engine_calls(reference, levels))
    if not expected:
        names = ", ".join(str(g) for g in grids)
        sys.exit(f"hour_speed: {names} and {reference} share no call with {MIN_CALLS}+ calls")
    return used / expected


def hour_speeds(
    grids: list[Path], reference: Path, rates: Iterable[float] = ()
) -> dict[float, float]:
    """The module docs' rule with ``levels="each"``: offered rate → that rate's factor, for
    every rate of ``grids`` and of ``rates``; a rate without a pair in common takes the factor
    over every level."""
    here, there = _pooled(grids, "each"), engine_calls(reference, "each")
    overall = hour_speed(grids, reference, "all")
    out = {}
    for rate in sorted({k[0] for k in here} | set(rates)):
        used, expected = _ratio(
            {k: v for k, v in here.items() if k[0] == rate},
            {k: v for k, v in there.items() if k[0] == rate},
        )
        out[rate] = used / expected if expected else overall
    return out


def at_hour(scenario: Scenario, factor: float) -> Scenario:
    """``scenario`` with every runtime call's cost (``gpu.mean_ms``, ``batch_ms``) x factor."""
    services = []
    for s in scenario.services:
        batching = s.batching
        if batching is not None:
            points = tuple((n, ms * factor) for n, ms in batching.batch_ms)
            batching = replace(batching, batch_ms=points)
        services.append(
            replace(s, gpu=replace(s.gpu, mean_ms=s.gpu.mean_ms * factor), batching=batching)
        )
    return replace(scenario, services=tuple(services))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("grid", type=Path, nargs="+", help="a calibration grid (timelines.json)")
    ap.add_argument(
        "--reference", type=Path, required=True, help="the grid the scenario was read off"
    )
    ap.add_argument("--levels", choices=LEVELS, default="lightest", help="default lightest")
    args = ap.parse_args(argv)
    for grid in args.grid:
        if args.levels == "each":
            each = hour_speeds([grid], args.reference)
            print(f"{grid}: " + ", ".join(f"{r:g}: {f:.3f}" for r, f in each.items()))
        else:
            print(f"{grid}: {hour_speed([grid], args.reference, args.levels):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
