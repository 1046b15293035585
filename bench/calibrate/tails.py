"""The slowest requests of a calibration lab run taken apart, beside the simulator's.

A lab run's device timeline (``runs/VARIANT/L*-r*.trace.json``) has one slice per batch: its
model, size and device, ``ts`` and ``dur`` (dispatched to completed on the driver's clock), the
runtime call's ``measured_ms`` and ``queue_wait_ms`` — how long the batch's *oldest* request
waited, from its arrival in the scheduler's state to the dispatch (lanes-server probe.rs). It has
no per-request records, so each request's time *inside* the server's scheduling path is rebuilt:

- **The rule.** A batch takes every request of its model queued at its dispatch (up to the
  maximum), so its other n - 1 requests arrived after the oldest and before the dispatch, Poisson,
  so uniformly: request j of n (0 the oldest) is put at ``j / n`` of that window. Its wait until
  the model's previous batch completed (one batch of a model in flight under ``fifo`` and
  ``sjf``) is its *batcher* wait; the rest up to the dispatch its *device queue* wait (every
  device busy); then the *device hold* (``dur - measured_ms``: the hand-offs between the driver
  and the device thread) and the *call* (``measured_ms``, its preemptions included). Their sum
  is the request's *inside* latency; the rest of its measured latency (the client, HTTP, pre and
  post on the I/O threads, the wake-ups between threads) is *outside* and is not in the
  timeline.
- **Per level** (repeats pooled): the inside latency's p50/p90/p99 per model and over all
  requests beside the measured p50/p90/p99 (mean over repeats of each run's), and, for the
  slowest 1 % of requests by inside latency, the mean of each part.
- **Per batch size**: the calls' and the device times' (``dur``) p50/p90/p99 and cv, and the
  same quantiles of what the scenario gives a batch of that size without the cores' sharing
  (``--scenario``: the cost curve x the mean of n draws of the service's ``gpu`` law, plus a
  draw of ``host.device_hold_ms`` and a Poisson count of ``host.call_preempt_ms`` draws at
  ``host.call_preempt_per_ms`` per ms of cost; ``SAMPLES`` draws).
- **The simulator** (``--sim``): the scenario as given (no figure read off the run) at the
  same offered rates, per service p50/p90/p99 and mean batch size (mean over ``--seeds``); and
  its device timelines (``lanes.sim.timeline``, one per seed, measured batches only) taken
  apart by the same rule — a simulated batch's ``oldest_ms`` is its oldest request's entry into
  the serving state, its call ``end_ms - called_ms`` — so that the same tables, the slowest
  1 %'s parts and the per-size call and device times, stand beside the lab's (levels named
  ``sim VARIANT RATE req/s``). The simulator knows each request's wait exactly; on its
  timelines the rule rebuilds the total of those waits to 0.3 % (crates/lanes-sim/tests/
  calls.rs, which allows 10 %).

``--hour-speed REF`` scales the scenario's runtime calls to the results' hour against the grid
REF it was read off (hour_speed.py's factor and rule), as against_demo.py does.

Run:  python bench/calibrate/tails.py RESULTS --variant fifo --rates 400,600
      [--scenario FILE] [--hour-speed REF] [--sim] [--seeds 3] [--requests 40000]
      [--markdown OUT.md]
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import math
import random
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compare import DEFAULT_SCENARIO, emit, load_runs, scenario_rate  # beside this file
from hour_speed import at_hour, hour_speed
from timelines import quantile

from lanes import sim
from lanes.sim.scenario import Scenario, Service

SAMPLES = 20_000
"""Draws per (model, size) of the scenario's device time."""
PARTS = ("batcher", "queue", "hold", "call")


@dataclass(frozen=True)
class Batch:
    """One batch of a lab timeline, times in ms on the driver's clock."""

    model: str
    size: int
    oldest: float
    """Its oldest request's arrival."""
    dispatched: float
    done: float
    call: float


def batches(trace: dict[str, Any]) -> list[Batch]:
    """The timeline's batches (failed ones left out), by dispatch."""
    out = []
    for ev in trace["traceEvents"]:
        if ev.get("ph") != "X" or ev["args"].get("failed"):
            continue
        a = ev["args"]
        ts = ev["ts"] / 1e3
        out.append(
            Batch(
                model=a["model"],
                size=int(a["batch_size"]),
                oldest=ts - a["queue_wait_ms"],
                dispatched=ts,
                done=ts + ev["dur"] / 1e3,
                call=a["measured_ms"],
            )
        )
    return sorted(out, key=lambda b: b.dispatched)


def requests_inside(bs: list[Batch]) -> list[dict[str, float]]:
    """Each request's parts inside the server (module docs' rule), one model's batches in
    dispatch order; the first batch is left out (its model's previous completion is unknown)."""
    out = []
    for prev, b in itertools.pairwise(bs):
        hold = max(0.0, b.done - b.dispatched - b.call)
        for j in range(b.size):
            arrived = b.oldest + (b.dispatched - b.oldest) * j / b.size
            batcher = max(0.0, min(prev.done, b.dispatched) - arrived)
            queue = b.dispatched - arrived - batcher
            total = batcher + queue + hold + b.call
            out.append(
                {"batcher": batcher, "queue": queue, "hold": hold, "call": b.call, "total": total}
            )
    return out


def q3(xs: list[float]) -> str:
    """``p50 / p90 / p99`` of ``xs``."""
    s = sorted(xs)
    return " / ".join(f"{quantile(s, p):.2f}" for p in (0.5, 0.9, 0.99))


def cv(xs: list[float]) -> float:
    """Standard deviation ÷ mean."""
    return statistics.pstdev(xs) / statistics.fmean(xs) if len(xs) > 1 else 0.0


@dataclass
class Level:
    """One (variant, rate) of the lab (repeats pooled) or of the simulator (seeds pooled)."""

    count: str
    """What was pooled, e.g. ``3 runs``."""
    measured: dict[str | None, str]
    """Per model (``None``: all requests) the measured ``p50 / p90 / p99``, mean over runs."""
    inside: dict[str, list[dict[str, float]]]
    """Per model, each request's parts."""
    by_size: dict[tuple[str, int], list[Batch]]


def read_level(results: Path, runs: list[dict[str, Any]]) -> Level:
    """The timelines of ``runs`` (one variant and rate) read and taken apart."""
    inside: dict[str, list[dict[str, float]]] = defaultdict(list)
    by_size: dict[tuple[str, int], list[Batch]] = defaultdict(list)
    for run in runs:
        variant, rid = run["variant"], run["id"].split("/")[-1]
        path = results / "runs" / variant / f"{rid}.trace.json"
        per_model: dict[str, list[Batch]] = defaultdict(list)
        for b in batches(json.loads(path.read_text())):
            per_model[b.model].append(b)
            by_size[(b.model, b.size)].append(b)
        for model, bs in per_model.items():
            inside[model] += requests_inside(bs)
    measured = {m: measured_q(runs, m) for m in [*inside, None]}
    return Level(f"{len(runs)} runs", measured, dict(inside), dict(by_size))


def sim_level(scenario: Scenario, variant: str, rate: float, seeds: int, n: int) -> Level:
    """The simulator's device timelines at ``rate`` (seeds 1..``seeds``, ``n`` requests each)
    taken apart as the lab's (module docs); measured figures are the points' own."""
    load = rate / scenario_rate(scenario)
    inside: dict[str, list[dict[str, float]]] = defaultdict(list)
    by_size: dict[tuple[str, int], list[Batch]] = defaultdict(list)
    points = []
    for seed in range(1, seeds + 1):
        point, spans = sim.timeline(scenario, variant, load, seed=seed, requests=n)
        points.append(point)
        per_model: dict[str, list[Batch]] = defaultdict(list)
        for sp in sorted((sp for sp in spans if sp["measured"]), key=lambda sp: sp["start_ms"]):
            b = Batch(
                model=sp["service"],
                size=int(sp["size"]),
                oldest=sp["oldest_ms"],
                dispatched=sp["start_ms"],
                done=sp["end_ms"],
                call=sp["end_ms"] - sp["called_ms"],
            )
            per_model[b.model].append(b)
            by_size[(b.model, b.size)].append(b)
        for model, bs in per_model.items():
            inside[model] += requests_inside(bs)

    def figs(model: str | None) -> str:
        lat = [p["latency_ms"] if model is None else p["services"][model] for p in points]
        return " / ".join(f"{statistics.fmean(x[q] for x in lat):.2f}" for q in QS)

    measured = {m: figs(m) for m in [*inside, None]}
    return Level(f"{seeds} seeds x {n} requests", measured, dict(inside), dict(by_size))


def measured_q(runs: list[dict[str, Any]], model: str | None) -> str:
    """Mean over runs of each run's p50 / p90 / p99, overall or of one model."""
    cells = []
    for p in ("p50", "p90", "p99"):
        xs = [
            (r["load"] if model is None else r["load"]["models"][model])["latency_ms"][p]
            for r in runs
        ]
        cells.append(f"{statistics.fmean(xs):.2f}")
    return " / ".join(cells)


def slowest(reqs: list[dict[str, float]], share: float = 0.01) -> str:
    """The mean of each part over the slowest ``share`` of ``reqs`` by inside latency."""
    top = sorted(reqs, key=lambda r: r["total"])[-max(1, int(len(reqs) * share)) :]
    means = [statistics.fmean(r[k] for r in top) for k in (*PARTS, "total")]
    return " | ".join(f"{m:.2f}" for m in means)


def level_tables(name: str, lv: Level) -> str:
    """The inside-vs-measured table and the slowest requests' parts of one level."""
    lines = [
        f"#### {name}: {lv.count}",
        "",
        "| model | requests rebuilt | inside p50 / p90 / p99 ms | measured p50 / p90 / p99 ms "
        "| slowest 1 % inside: batcher | queue | hold | call | total ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    every = [r for reqs in lv.inside.values() for r in reqs]
    for model in sorted(lv.inside):
        reqs = lv.inside[model]
        lines.append(
            f"| {model} | {len(reqs)} | {q3([r['total'] for r in reqs])} | "
            f"{lv.measured[model]} | {slowest(reqs)} |"
        )
    lines.append(
        f"| all | {len(every)} | {q3([r['total'] for r in every])} | "
        f"{lv.measured[None]} | {slowest(every)} |"
    )
    return "\n".join(lines) + "\n"


def scenario_device(service: Service, scenario: Scenario, n: int, rng: random.Random) -> float:
    """One draw of what the scenario holds a device for with a batch of ``n`` of ``service``,
    the cores' sharing left out (module docs), ms."""
    g = service.gpu
    s2 = math.log(1 + g.cv**2)
    mu = math.log(g.mean_ms) - s2 / 2
    work = statistics.fmean(rng.lognormvariate(mu, math.sqrt(s2)) for _ in range(n))
    cost = curve(service, n) * work / g.mean_ms
    h = scenario.host
    total = cost + draw(h.device_hold_ms, rng)
    if h.call_preempt_per_ms:
        for _ in range(poisson(h.call_preempt_per_ms * cost, rng)):
            total += draw(h.call_preempt_ms, rng)
    return total


def curve(service: Service, n: int) -> float:
    """The service's mean cost of a batch of ``n`` (the simulator's curve), ms."""
    pts = [(1, service.gpu.mean_ms)]
    if service.batching is not None:
        pts += list(service.batching.batch_ms)
    xs = [p[0] for p in pts]
    i = bisect.bisect_left(xs, n)
    if i < len(pts) and xs[i] == n:
        return pts[i][1]
    if i == 0:
        return pts[0][1]
    (x0, y0), (x1, y1) = (pts[i - 1], pts[i]) if i < len(pts) else (pts[-2], pts[-1])
    return y0 + (y1 - y0) * (n - x0) / (x1 - x0)


def draw(points: tuple[tuple[float, float], ...], rng: random.Random) -> float:
    """A draw of the quantile function through ``points`` (linear between them)."""
    if not points:
        return 0.0
    u = rng.random()
    for (p0, x0), (p1, x1) in itertools.pairwise(points):
        if u <= p1:
            return x0 + (x1 - x0) * (u - p0) / (p1 - p0)
    return points[-1][1]


def poisson(mean: float, rng: random.Random) -> int:
    """A Poisson draw (Knuth's method; the means here are small)."""
    limit, k, p = math.exp(-mean), 0, rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return k


def size_table(levels: dict[str, Level], scenario: Scenario) -> str:
    """Per (model, size) with at least 30 batches at some level: the lab's call and device
    times by level beside the scenario's device time without the cores' sharing."""
    services = {s.name: s for s in scenario.services}
    keys = sorted({k for lv in levels.values() for k, bs in lv.by_size.items() if len(bs) >= 30})
    lines = [
        "| model | size | level | batches | call p50 / p90 / p99 ms | call cv | device (dur) "
        "p50 / p90 / p99 ms | scenario's device, cores unshared: p50 / p90 / p99 ms |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    rng = random.Random(1)
    for model, n in keys:
        s = services[model]
        model_draws = [scenario_device(s, scenario, n, rng) for _ in range(SAMPLES)]
        for name, lv in levels.items():
            bs = lv.by_size.get((model, n), [])
            if len(bs) < 30:
                continue
            calls = [b.call for b in bs]
            durs = [b.done - b.dispatched for b in bs]
            lines.append(
                f"| {model} | {n} | {name} | {len(bs)} | {q3(calls)} | {cv(calls):.2f} | "
                f"{q3(durs)} | {q3(model_draws)} |"
            )
    return "\n".join(lines) + "\n"


def sim_table(scenario: Scenario, variant: str, rates: list[float], seeds: int, n: int) -> str:
    """The simulator on ``scenario`` as given: per service p50 / p90 / p99 and batch size."""
    per_load = scenario_rate(scenario)
    loads = [r / per_load for r in rates]
    res = sim.run(scenario, [variant], loads, seeds=list(range(1, seeds + 1)), requests=n)
    lines = [
        f"simulated ({scenario.name}, {seeds} seeds x {n} requests):",
        "",
        "| rate | service | p50 / p90 / p99 ms | mean batch |",
        "|---:|---|---:|---:|",
    ]
    for rate, load in zip(rates, loads, strict=True):
        pts = [p for p in res.points if abs(p["load"] - load) < 1e-9]
        for name in [*scenario.service_names, "all"]:
            if name == "all":
                figs = [statistics.fmean(p["latency_ms"][q] for p in pts) for q in QS]
                batch = statistics.fmean(p["mean_batch_size"] for p in pts)
            else:
                figs = [statistics.fmean(p["services"][name][q] for p in pts) for q in QS]
                batch = statistics.fmean(p["services"][name]["mean_batch_size"] for p in pts)
            lines.append(
                f"| {rate:.0f} | {name} | " + " / ".join(f"{x:.2f}" for x in figs) + f" | "
                f"{batch:.2f} |"
            )
    return "\n".join(lines) + "\n"


QS = ("p50", "p90", "p99")


def lab_batches(lv: Level) -> str:
    """Mean batch size per model at one level."""
    sizes: dict[str, list[int]] = defaultdict(list)
    for (model, n), bs in lv.by_size.items():
        sizes[model] += [n] * len(bs)
    return ", ".join(f"{m} {statistics.fmean(v):.2f}" for m, v in sorted(sizes.items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="a lanes bench run results folder with traces")
    ap.add_argument("--variant", default="fifo")
    ap.add_argument("--rates", default="400,600", help="offered req/s, comma-separated")
    ap.add_argument("--scenario", type=Path, default=DEFAULT_SCENARIO)
    ap.add_argument(
        "--hour-speed",
        type=Path,
        metavar="REF",
        help="scale the scenario's calls to the results' hour against REF (the grid read)",
    )
    ap.add_argument("--sim", action="store_true", help="also the simulator on the scenario")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=40_000)
    ap.add_argument("--markdown", type=Path)
    args = ap.parse_args(argv)
    rates = [float(x) for x in args.rates.split(",")]
    scenario = Scenario.load(args.scenario)
    if args.hour_speed is not None:
        scenario = at_hour(scenario, hour_speed([args.results], args.hour_speed))
    runs = [r for r in load_runs(args.results) if r["variant"] == args.variant]
    levels: dict[str, Level] = {}
    parts = []
    for rate in rates:
        these = [r for r in runs if r["offered"]["rate_rps"] == rate]
        if not these:
            raise SystemExit(f"tails: no {args.variant} runs at {rate:g} req/s")
        name = f"{args.variant} {rate:.0f} req/s"
        levels[name] = lv = read_level(args.results, these)
        parts.append(level_tables(name, lv) + f"\nmean batch: {lab_batches(lv)}\n")
    if args.sim:
        for rate in rates:
            name = f"sim {args.variant} {rate:.0f} req/s"
            levels[name] = lv = sim_level(scenario, args.variant, rate, args.seeds, args.requests)
            parts.append(level_tables(name, lv) + f"\nmean batch: {lab_batches(lv)}\n")
    parts.append(size_table(levels, scenario))
    if args.sim:
        parts.append(sim_table(scenario, args.variant, rates, args.seeds, args.requests))
    return emit("\n".join(parts), args.markdown)


if __name__ == "__main__":
    raise SystemExit(main())
