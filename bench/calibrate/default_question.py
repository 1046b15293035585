"""Issue 15's default question on the calibrated scenario: ``fair`` with two batches per model
in flight against today's ``sjf`` with one, in ``lanes sim``.

Two comparisons, each on ``examples/scenarios/cpu-2core.toml`` (this host's native server, as
calibrated by ``compare.py``) with every service's ``num_batch_threads`` set as the lab's variant
runs it (1: ``lanes serve --demo``; 2: ``bench/zoo_paths/serve.py --batch-threads 2``):

- **Steady capacity**: the demo's mix, Poisson; each variant's capacity at SLO by ``lanes
  sim``'s bisection (the highest load at which >= 99 % of requests, overall and of every
  service, meet the 150 ms SLO; a grid of 0.01 load), as req/s. The lab's counterpart:
  ``examples/experiments/ocr-fair-steady.toml`` (docs/results/sim.md).
- **Bursts**: as ``examples/experiments/ocr-isolation.toml`` runs them in the lab — ``char_cnn``
  and ``line_rnn_en`` Poisson, ``line_rnn_zh`` on the first 1,000 arrivals of the Azure code
  trace (``examples/scenarios/traces/azure-code-1000.csv``) — at the lab's offered rates: each
  model's p99, its ratio to ``independent``'s (the target: at most 1.10 for every model), the
  mean and the goodput. The trace in the form the lab sends it (``--segment-s``, default 1 s as
  the lab's ``segment_s``): its time axis compressed to ``line_rnn_zh``'s rate at the level (the
  lab's ``trace_fit = "time"``), its arrivals counted per segment, and each segment's arrivals
  placed uniformly at random within it (seeded) — the lab's piecewise Poisson, with each
  segment's count as the trace's rather than a Poisson draw around it. ``--segment-s 0``: the
  trace's own timestamps, rescaled (``lanes sim``'s trace arrivals), burstier within a second.

``--hour-speed GRID`` (several pool) asks the question at that grid's hour: every runtime call of
the scenario scaled by the hour's speed (hour_speed.py: the grid's light-load calls' CPU over
``--reference``'s, the grid the scenario was read off; for cpu-2core.toml round 27's seed-157 grid,
the default), as against_demo.py ``--hour-speed`` does. On a slow hour the capacities fall by
about that factor; the question is whether the ratios between the policies move.

Every figure is the mean over seeds. ``independent`` here is the scenario's: one runtime per
model per core (``--devices cpu:2 --cpu-threads 1``); the lab's isolation runs used ``--devices
auto`` for it (each model one runtime over both cores), which the scenario does not model.

Run:  python bench/calibrate/default_question.py [--scenario FILE] [--seeds 3]
      [--requests 40000] [--burst-requests 100000] [--segment-s 1.0]
      [--hour-speed GRID [--hour-speed GRID ...] [--reference GRID]] [--markdown OUT.md]
"""

from __future__ import annotations

import argparse
import random
import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any

from compare import emit, scenario_rate  # bench/calibrate/compare.py, beside this file
from hour_speed import at_hour, hour_speed

from lanes import sim
from lanes.sim.scenario import Batching, Scenario, Trace
from lanes.sim.trace import load_trace

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SCENARIO = ROOT / "examples" / "scenarios" / "cpu-2core.toml"
TRACE = ROOT / "examples" / "scenarios" / "traces" / "azure-code-1000.csv"
DEFAULT_REFERENCE = ROOT / "docs" / "results" / "calibration" / "round27" / "grid-seed157"
"""The grid :data:`DEFAULT_SCENARIO`'s costs were read off (its header says so): the default
``--reference`` of ``--hour-speed``."""
BURSTING = "line_rnn_zh"
FAIR = "fair:fast=25,hold=6,burst=100"
FAIR_FAST8 = "fair:fast=8,hold=6,burst=100"
"""``fair`` whose fast lane takes jobs of at most 8 ms: ``line_rnn_zh``'s batches of one (4.6 ms)
and ``line_rnn_en``'s up to 4, not ``line_rnn_zh``'s of 2 or more (the twelfth round)."""
FAIR_WIDE = "fair:fast=25,hold=6,burst=100,width=2,beside=any"
"""``fair-2``'s fast lane widened: two fast slots per device, open beside any job, so a short job
seldom waits for another short one (2026-11-28)."""
VARIANTS = (
    ("sjf", "sjf", 1),
    ("sjf-2", "sjf", 2),
    ("fair-2", FAIR, 2),
    ("fair-2-fast8", FAIR_FAST8, 2),
    ("fair-2-wide", FAIR_WIDE, 2),
    ("fair", FAIR, 1),
    ("fifo", "fifo", 1),
    ("independent", "independent", 1),
)
"""``(name, policy, batches of each model in flight)``; the first is today's default."""
BURST_VARIANTS = (
    "independent",
    "sjf",
    "fair",
    "sjf-2",
    "fair-2",
    "fair-2-fast8",
    "fair-2-wide",
)
BURST_RATES = (200.0, 330.0, 530.0)
"""The lab's isolation levels, req/s."""


def with_threads(scenario: Scenario, threads: int) -> Scenario:
    """``scenario`` with every service's ``num_batch_threads`` = ``threads``."""
    services = []
    for s in scenario.services:
        batching = s.batching or Batching()
        services.append(replace(s, batching=replace(batching, num_batch_threads=threads)))
    return replace(scenario, services=tuple(services))


def lab_form(times: tuple[float, ...], rate: float, segment_s: float) -> tuple[float, ...]:
    """``times`` (s, from 0) compressed to a mean ``rate`` per s, counted per ``segment_s``
    segment, each segment's arrivals placed uniformly at random within it (see the module
    docs); ``segment_s`` 0: ``times`` as they are."""
    if segment_s <= 0:
        return times
    scale = (len(times) - 1) / times[-1] / rate
    counts: dict[int, int] = {}
    for t in times:
        k = int(t * scale // segment_s)
        counts[k] = counts.get(k, 0) + 1
    rng = random.Random(1)
    out = sorted((k + rng.random()) * segment_s for k, n in counts.items() for _ in range(n))
    return tuple(t - out[0] for t in out)


def bursting(scenario: Scenario, rate: float, segment_s: float) -> Scenario:
    """``scenario`` at ``rate`` req/s with ``line_rnn_zh`` on the Azure code trace's first 1,000
    arrivals, in the lab's form (:func:`lab_form`)."""
    share = sum(s.share for s in scenario.services if s.name == BURSTING)
    share /= sum(s.share for s in scenario.services)
    trace = Trace(TRACE, lab_form(load_trace(TRACE), rate * share, segment_s))
    services = tuple(
        replace(s, arrival=trace) if s.name == BURSTING else s for s in scenario.services
    )
    return replace(scenario, services=services)


def steady(scenario: Scenario, seeds: list[int], requests: int) -> str:
    """The capacity table, req/s."""
    per_load = scenario_rate(scenario)
    caps = {}
    for name, policy, threads in VARIANTS:
        cap = sim.capacity(with_threads(scenario, threads), [policy], seeds, requests)
        caps[name] = next(iter(cap.values()))
    base = caps[VARIANTS[0][0]]
    lines = [
        f"Steady capacity (load 1.0 = {per_load:.0f} req/s; {len(seeds)} seeds x {requests}):",
        "",
        "| variant | capacity overall req/s (x sjf) | every service req/s (x sjf) |",
        "|---|---:|---:|",
    ]
    for name, _, _ in VARIANTS:
        c = caps[name]
        lines.append(
            f"| `{name}` | {c['overall'] * per_load:,.0f} ({c['overall'] / base['overall']:.2f}) "
            f"| {c['every_service'] * per_load:,.0f} "
            f"({c['every_service'] / base['every_service']:.2f}) |"
        )
    return "\n".join(lines) + "\n"


def bursts(scenario: Scenario, seeds: list[int], requests: int, segment_s: float) -> str:
    """The isolation table: per variant and rate, each model's p99 (x independent's)."""
    per_load = scenario_rate(scenario)
    policy = {name: (p, t) for name, p, t in VARIANTS}
    figures: dict[tuple[str, float], dict[str, Any]] = {}
    for name in BURST_VARIANTS:
        p, threads = policy[name]
        for rate in BURST_RATES:
            at_rate = with_threads(bursting(scenario, rate, segment_s), threads)
            pts = sim.run(at_rate, [p], [rate / per_load], seeds=seeds, requests=requests).points
            figures[(name, rate)] = {
                "p99": {
                    s.name: statistics.mean(x["services"][s.name]["latency_ms"]["p99"] for x in pts)
                    for s in scenario.services
                },
                "mean": statistics.mean(x["latency_ms"]["mean"] for x in pts),
                "goodput": statistics.mean(x["goodput_rps"] for x in pts),
            }
    names = [s.name for s in scenario.services]
    form = f"counted per {segment_s:g} s segment" if segment_s > 0 else "its own timestamps"
    lines = [
        f"Bursts ({BURSTING} on {TRACE.name}, {form}; {len(seeds)} seeds x {requests}):",
        "",
        "| variant | offered/s | "
        + " | ".join(f"{n} p99 ms (x indep.)" for n in names)
        + " | worst x indep. | mean ms (x indep.) | goodput/s (x indep.) |",
        "|---|---:|" + "---:|" * (len(names) + 3),
    ]
    for name in BURST_VARIANTS:
        for rate in BURST_RATES:
            f, ind = figures[(name, rate)], figures[("independent", rate)]
            ratios = [f["p99"][n] / ind["p99"][n] for n in names]
            cells = [f"{f['p99'][n]:,.1f} ({r:.2f})" for n, r in zip(names, ratios, strict=True)]
            lines.append(
                f"| `{name}` | {rate:.0f} | "
                + " | ".join(cells)
                + f" | **{max(ratios):.2f}** | {f['mean']:.1f} ({f['mean'] / ind['mean']:.2f}) "
                f"| {f['goodput']:.0f} ({f['goodput'] / ind['goodput']:.2f}) |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", type=Path, default=DEFAULT_SCENARIO)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=40_000, help="per capacity probe")
    ap.add_argument("--burst-requests", type=int, default=100_000, help="per burst point")
    ap.add_argument(
        "--segment-s", type=float, default=1.0, help="the trace's segments, s (0: timestamps)"
    )
    ap.add_argument(
        "--hour-speed",
        type=Path,
        action="append",
        metavar="GRID",
        help="ask at this calibration grid's hour: the calls scaled by its speed (hour_speed.py)",
    )
    ap.add_argument(
        "--reference",
        type=Path,
        default=None,
        help="with --hour-speed: the grid the scenario was read off (default for cpu-2core.toml: "
        "round 27's seed-157 grid)",
    )
    ap.add_argument("--markdown", type=Path, help="also write the tables here")
    args = ap.parse_args(argv)
    if args.reference is not None and not args.hour_speed:
        ap.error("--reference needs --hour-speed")
    scenario = Scenario.load(args.scenario)
    hour = ""
    if args.hour_speed:
        reference = args.reference
        if reference is None:
            if args.scenario.resolve() != DEFAULT_SCENARIO:
                ap.error("--hour-speed on a scenario of your own needs --reference GRID")
            reference = DEFAULT_REFERENCE
        factor = hour_speed(args.hour_speed, reference)
        scenario = at_hour(scenario, factor)
        grids = ", ".join(str(g) for g in args.hour_speed)
        hour = f", its calls x{factor:.3f} (the hour's speed of {grids} against {reference})"
    seeds = list(range(1, args.seeds + 1))
    text = (
        f"Scenario {args.scenario.name}{hour}\n\n"
        + steady(scenario, seeds, args.requests)
        + "\n"
        + bursts(scenario, seeds, args.burst_requests, args.segment_s)
    )
    return emit(text, args.markdown)


if __name__ == "__main__":
    raise SystemExit(main())
