"""A stretch of a lab run, call by call, beside the simulator's on the same arrivals.

replay.py says whether a run's tail comes back when the simulator is given the run's own
arrivals; this shows where it does not. The run's requests are replayed as they arrived at the
server (replay.py's ``trace`` arrivals, each model at its own rate, so that nothing is rescaled:
time 0 is the same instant in both), one pass of them, with ``lanes sim``'s device timeline
(``lanes.sim.timeline``) kept. For one model, in a stretch of the run:

- each of its batches in the lab (the run's device timeline: dispatch, device, size, the slice's
  ``dur``, the runtime call's ``measured_ms`` and ``cpu_ms``) and in the simulator under each
  seed (dispatch, device, size, dispatch to end, the call to its end, its solo cost);
- a summary per source: the batches and requests, the mean batch size, the runtime calls' time
  per request, their CPU (lab) or cost (simulator) per request, and **their time off a core**:
  the calls' time beyond their CPU (lab) or cost (simulator), per ms of it; and when the model
  last ran a batch of :data:`LARGE` or more in the stretch.

Run:  python bench/calibrate/burst.py GRID RUN --scenario FILE [--model NAME] [--from S]
      [--to S] [--seeds 2] [--markdown FILE]
(RUN as ``fifo/L2-r2``; the stretch in seconds from the replay's start, which is the first
instant every model's requests arrive: replay.py's cut.)
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import replay
from against_demo import GRID_AS_SIMULATED
from compare import emit, scenario_rate
from default_question import with_threads

from lanes import sim
from lanes._core import parse_policy
from lanes.sim.scenario import Scenario

LARGE = 6
"""A batch of this many requests or more counts as the model's lane fallen behind."""


@dataclass(frozen=True)
class Batch:
    """One batch on its device, ms from the replay's start."""

    start: float
    device: int
    size: int
    held: float
    """Dispatch to end."""
    call: float
    """The runtime call (to its end, with the simulator's absorbed preemptions)."""
    cpu: float
    """The call's CPU (lab) or solo cost (simulator)."""


def replay_zero_ms(trace: dict[str, Any]) -> float:
    """The replay's start on the trace's clock, ms: the latest first arrival of a model (the
    cut replay.arrivals makes)."""
    first = [min(ts) for ts in replay.fronts(trace).values()]
    if not first:
        sys.exit("burst: the run's trace holds no request spans (run with --trace-requests)")
    return max(first) / 1e3


def lab_batches(trace: dict[str, Any], model: str, lo: float, hi: float) -> list[Batch]:
    """The run's batches of ``model`` dispatched in [lo, hi] ms from the replay's start."""
    zero = replay_zero_ms(trace)
    out = []
    for ev in trace["traceEvents"]:
        a = ev.get("args", {})
        if ev.get("ph") != "X" or a.get("model") != model or "cpu_ms" not in a:
            continue
        t = ev["ts"] / 1e3 - zero
        if lo <= t <= hi:
            out.append(
                Batch(
                    t,
                    int(ev.get("tid", 0)),
                    int(a["batch_size"]),
                    ev["dur"] / 1e3,
                    float(a["measured_ms"]),
                    float(a["cpu_ms"]),
                )
            )
    return sorted(out, key=lambda b: b.start)


def sim_batches(spans: list[dict[str, Any]], model: str, lo: float, hi: float) -> list[Batch]:
    """The simulator's batches of ``model`` dispatched in [lo, hi] ms."""
    return sorted(
        (
            Batch(
                s["start_ms"],
                s["device"],
                s["size"],
                s["end_ms"] - s["start_ms"],
                s["end_ms"] - s["called_ms"],
                s["cost_ms"],
            )
            for s in spans
            if s["service"] == model and lo <= s["start_ms"] <= hi
        ),
        key=lambda b: b.start,
    )


def summary(batches: list[Batch]) -> str:
    """The module docs' summary of one source's batches."""
    if not batches:
        return "no batches"
    requests = sum(b.size for b in batches)
    call = sum(b.call for b in batches)
    cpu = sum(b.cpu for b in batches)
    large = [b for b in batches if b.size >= LARGE]
    last = f"the last at {max(b.start for b in large):.0f} ms" if large else "none"
    return (
        f"{len(batches)} batches, {requests} requests (mean size {requests / len(batches):.2f}); "
        f"calls {call / requests:.2f} ms a request, CPU or cost {cpu / requests:.2f}; "
        f"off a core {call / cpu - 1:.2f} ms per ms; batches of {LARGE}+: {len(large)}, {last}"
    )


def rows(batches: list[Batch], cpu_name: str) -> list[str]:
    out = [
        f"| at ms | device | size | held ms | call ms | {cpu_name} ms |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for b in batches:
        out.append(
            f"| {b.start:.1f} | {b.device} | {b.size} | {b.held:.1f} | {b.call:.1f} | {b.cpu:.1f} |"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("grid", type=Path, help="a calibration grid run with --trace-requests")
    ap.add_argument("run", help="the run, as VARIANT/L<level>-r<repeat> (e.g. fifo/L2-r2)")
    ap.add_argument("--scenario", type=Path, required=True)
    ap.add_argument("--model", default="line_rnn_zh")
    ap.add_argument("--from", dest="lo", type=float, default=0.0, help="s (default 0)")
    ap.add_argument("--to", dest="hi", type=float, default=1.0, help="s (default 1)")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--markdown", type=Path, default=None)
    args = ap.parse_args(argv)
    variant, _, stem = args.run.partition("/")
    if variant not in GRID_AS_SIMULATED or not stem:
        ap.error(
            f"run {args.run!r}: give VARIANT/L<level>-r<repeat>, VARIANT one of "
            f"{', '.join(GRID_AS_SIMULATED)}"
        )
    if not args.hi > args.lo >= 0:
        ap.error(f"--from {args.lo} --to {args.hi}: need 0 <= from < to")
    trace_path = args.grid / "runs" / variant / f"{stem}.trace.json"
    if not trace_path.is_file():
        ap.error(f"{trace_path} is missing (a grid run with --trace-requests)")
    scenario = Scenario.load(args.scenario)
    if args.model not in {s.name for s in scenario.services}:
        ap.error(f"--model {args.model}: {args.scenario} has no such service")
    run = next((r for r in replay.load(args.grid, [variant], None) if r.id == args.run), None)
    if run is None:
        ap.error(f"{trace_path.with_name(stem + '.json')} is missing (the run's result)")
    replayed, rate = replay.with_arrivals(scenario, run)
    policy, threads = GRID_AS_SIMULATED[variant]
    replayed = with_threads(replayed, threads)
    arrivals = sum(len(t) for t in run.arrivals.values())
    lo, hi = args.lo * 1e3, args.hi * 1e3
    lab = lab_batches(json.loads(trace_path.read_text()), args.model, lo, hi)
    out = [
        f"{args.run} of {args.grid}, {args.model}'s batches from {args.lo} to {args.hi} s, "
        f"beside {args.scenario} on the run's {arrivals} arrivals ({rate:.0f} req/s)",
        "",
        f"**lab**: {summary(lab)}",
    ]
    seeds = []
    for seed in range(1, args.seeds + 1):
        _, spans = sim.timeline(
            replayed, parse_policy(policy), rate / scenario_rate(replayed), seed, arrivals
        )
        got = sim_batches(spans, args.model, lo, hi)
        out.append(f"**simulated, seed {seed}**: {summary(got)}")
        seeds.append((seed, got))
    out += ["", "**lab**", "", *rows(lab, "CPU")]
    for seed, got in seeds:
        out += ["", f"**simulated, seed {seed}**", "", *rows(got, "cost")]
    return emit("\n".join(out) + "\n", args.markdown)


if __name__ == "__main__":
    raise SystemExit(main())
