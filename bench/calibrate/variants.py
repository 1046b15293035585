"""Candidate model changes for the tails, one at a time, against a lab grid (the eighth round).

Each variant is the scenario (``--scenario``, default cpu-2core.toml as committed) with one
change, simulated at the grid's offered rates below the knee (compare.py's ``KNEE``) and counted
by compare.py's rule (within ``TARGET`` of the mean over repeats), with the p99 errors:

- ``committed``: the scenario as it is.
- ``slice_ms 4``: the cores handed out in 4 ms slices instead of processor sharing
  (``host.slice_ms``; slices.py measured 4 ms on this host), so a woken thread can wait for a
  running call's slice to end.
- ``preempt rate by level``: ``host.call_preempt_per_ms`` at each level the rate sched.py
  measured under ``fifo`` at that rate (lab-native/sched/fifo.json: 0.720, 1.011, 1.376, 1.686 per
  ms of CPU at 200-800 req/s; linear between, the last beyond) instead of their median 1.127 —
  the load-dependent preemption the committed scenario takes as one number.
- ``run speed cv C``: every CPU cost (``pre``, ``gpu``, ``batch_ms``, ``post``) scaled per run by a
  factor of mean 1 and coefficient of variation C (lognormal; ``SPEED_POINTS`` equally likely
  factors, each simulated with the same seeds, the figures averaged over them), at the same
  offered rates: the host's speed varying from one run to the next, as the lab's repeats show
  (each run's median in-situ call of a batch of one, per model, ÷ that model's mean over the
  level's repeats, averaged over the models: ``--speed-cv``, default 0.07, the eighth round's
  quiet runs at 200-400 req/s).
- ``client part as measured``: ``host.client_ms`` as the ninth round measured it
  (:data:`CLIENT_MEASURED`), the tenth round's scenario: the I/O threads' reading and writing of
  each request counted twice, once as CPU on ``pre`` and once inside the client part (the
  eleventh round took it off the client part).
- ``I/O CPU in the background``: the other way to count it once — :data:`IO_EXTRA` off every
  ``pre`` and onto ``host.busy_cores`` as ``rate`` x IO_EXTRA, with the client part as measured.
- ``call stretch``: ``host.call_stretch`` = :data:`STRETCH`, the ninth round's measured slowdown
  of ``independent``'s runtime calls beyond processor sharing by how many run at once
  (calibration.md, "How `independent`'s calls stretch"); it applies to ``independent`` only
  (six runtimes on two cores), so ``fifo`` and ``sjf`` simulate as committed.
- ``call stretch, weighted``: the same table as a share instead of a loss while the runnable
  phases outnumber the cores (``host.call_stretch_weighted``, the fourteenth round): a call
  gets ``1/s(k)`` of another phase's share of cores that hand out all they have; with a core to
  spare the calls stretch as in ``call stretch``, losing only a spare core's time.

Run:  python bench/calibrate/variants.py RESULTS [--max-others CORES] [--speed-cv 0.07]
      [--only NAME ...] [--seeds 3] [--requests 40000] [--markdown OUT.md]
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from compare import (  # beside this file
    DEFAULT_SCENARIO,
    KNEE,
    TARGET,
    emit,
    linear,
    load_runs,
    measured,
    others_cores,
    scenario_rate,
)

from lanes import sim
from lanes.sim.scenario import Scenario

SCHED_FIFO = ((200.0, 0.720), (400.0, 1.011), (600.0, 1.376), (800.0, 1.686))
"""sched.py's preemptions per ms of a device thread's CPU under ``fifo`` by offered rate
(docs/results/calibration/lab-native/sched/fifo.json, the runs cpu-2core.toml's median is of)."""
STRETCH = (1.0, 1.25, 1.18, 1.05)
"""The ninth round's `line_rnn_zh` calls under ``independent`` at 200-600 req/s, the median
duration with k calls running ÷ processor sharing's 4.7 ms x max(1, k / 2), k = 1, 2, 3, 4
(lab-round9/scratch/stretch.txt; the middle of each k's range)."""
IO_EXTRA = 0.226
"""ms of the I/O threads' CPU per request beyond the hooks, decode and encode, which
cpu-2core.toml puts on each ``pre`` (its header: 0.340 ms by threads.py at 600 req/s, less the
timer's hooks)."""
CLIENT_MEASURED = ((0.0, 0.02), (0.5, 0.35), (0.9, 0.91), (0.99, 1.47), (1.0, 2.2))
"""The client part as the ninth round measured it (client latency minus the spans' total, at
100 req/s), which cpu-2core.toml took as ``host.client_ms`` until the eleventh round; the
committed table is this less :data:`IO_EXTRA` (floored at 0), which ``pre`` runs already."""
SPEED_POINTS = 8
FIGURES = ("p50", "p99", "goodput")


def preempt_rate(rate: float) -> float:
    """:data:`SCHED_FIFO` at ``rate``: linear between the measured rates, the nearest outside."""
    return linear(SCHED_FIFO, rate)


def scaled(sc: Scenario, f: float) -> Scenario:
    """``sc`` with every CPU cost (pre, gpu, batch_ms, post) times ``f``."""
    services = []
    for s in sc.services:
        b = s.batching
        if b is not None:
            b = replace(b, batch_ms=tuple((n, ms * f) for n, ms in b.batch_ms))
        services.append(
            replace(
                s,
                pre=replace(s.pre, mean_ms=s.pre.mean_ms * f),
                gpu=replace(s.gpu, mean_ms=s.gpu.mean_ms * f),
                post=replace(s.post, mean_ms=s.post.mean_ms * f),
                batching=b,
            )
        )
    return replace(sc, services=tuple(services))


def io_background(sc: Scenario, rate: float) -> Scenario:
    """``sc`` with :data:`IO_EXTRA` off every ``pre`` and on ``host.busy_cores`` instead, as
    ``rate`` x IO_EXTRA of core time per second, and the client part as measured
    (:data:`CLIENT_MEASURED`): the I/O threads' CPU still takes the cores, but adds to a
    request's latency only inside the measured client part."""
    services = tuple(
        replace(s, pre=replace(s.pre, mean_ms=max(0.0, s.pre.mean_ms - IO_EXTRA)))
        for s in sc.services
    )
    busy = sc.host.busy_cores + rate * IO_EXTRA / 1000.0
    host = replace(sc.host, busy_cores=busy, client_ms=CLIENT_MEASURED)
    return replace(sc, services=services, host=host)


def speed_factors(cv: float, k: int = SPEED_POINTS) -> list[float]:
    """``k`` equally likely factors of a lognormal law with mean 1 and ``cv`` (its quantiles at
    the midpoints of ``k`` equal slices)."""
    s2 = math.log(1 + cv * cv)
    nd = statistics.NormalDist()
    return [math.exp(-s2 / 2 + math.sqrt(s2) * nd.inv_cdf((i + 0.5) / k)) for i in range(k)]


Points = list[dict[str, Any]]
Variant = Callable[[str, float], Points]


def variants(sc: Scenario, speed_cv: float, seeds: int, requests: int) -> dict[str, Variant]:
    """Name → (policy, offered rate) → the simulator's points (every seed, every factor)."""

    def at(s: Scenario, policy: str, rate: float) -> Points:
        load = rate / scenario_rate(s)  # the rate, whatever the costs
        res = sim.run(s, [policy], [load], seeds=list(range(1, seeds + 1)), requests=requests)
        return list(res.points)

    def host(**kw: Any) -> Scenario:
        return replace(sc, host=replace(sc.host, **kw))

    return {
        "committed": lambda p, r: at(sc, p, r),
        "slice_ms 4": lambda p, r: at(host(slice_ms=4.0), p, r),
        "preempt rate by level": lambda p, r: at(host(call_preempt_per_ms=preempt_rate(r)), p, r),
        "call stretch": lambda p, r: at(host(call_stretch=STRETCH), p, r),
        "call stretch, weighted": lambda p, r: at(
            host(call_stretch=STRETCH, call_stretch_weighted=True), p, r
        ),
        "client part as measured": lambda p, r: at(host(client_ms=CLIENT_MEASURED), p, r),
        "I/O CPU in the background": lambda p, r: at(io_background(sc, r), p, r),
        f"run speed cv {speed_cv:g}": lambda p, r: [
            x for f in speed_factors(speed_cv) for x in at(scaled(sc, f), p, r)
        ],
    }


def figure(points: Points, name: str) -> float:
    """The mean over ``points`` of p50, p99 (ms) or goodput (req/s)."""
    if name == "goodput":
        return statistics.fmean(p["goodput_rps"] for p in points)
    return statistics.fmean(p["latency_ms"][name] for p in points)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="a lanes bench run results folder")
    ap.add_argument("--scenario", type=Path, default=DEFAULT_SCENARIO)
    ap.add_argument("--max-others", type=float, help="compare.py's --max-others")
    ap.add_argument("--speed-cv", type=float, default=0.07)
    ap.add_argument("--only", nargs="+", help="these variants only")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=40_000)
    ap.add_argument("--markdown", type=Path)
    args = ap.parse_args(argv)
    runs = load_runs(args.results)
    if args.max_others is not None:
        runs = [r for r in runs if others_cores(r) <= args.max_others]
    meas = measured(runs)
    keys = sorted(k for k, m in meas.items() if m["goodput"] >= KNEE * k[1])
    table = variants(Scenario.load(args.scenario), args.speed_cv, args.seeds, args.requests)
    names = args.only or list(table)
    lines = [
        f"{args.results}, {len(runs)} runs, {len(keys)} levels below the knee; "
        f"{args.seeds} seeds x {args.requests} requests",
        "",
        "| variant | within 15 %: p50 + p99 + goodput | of | p99 error per level "
        "(" + ", ".join(f"{v} {r:.0f}" for v, r in keys) + ") | p50 outside 15 % |",
        "|---|---:|---:|---|---|",
    ]
    for name in names:
        counts = dict.fromkeys(FIGURES, 0)
        p99s, p50s = [], []
        for variant, rate in keys:
            pts = table[name](variant, rate)
            m = meas[(variant, rate)]
            for f in FIGURES:
                err = (figure(pts, f) - m[f]) / m[f]
                counts[f] += abs(err) <= TARGET
                if f == "p99":
                    p99s.append(f"{err * 100:+.0f}")
                if f == "p50" and abs(err) > TARGET:
                    p50s.append(f"{variant} {rate:.0f} {err * 100:+.0f} %")
        total = sum(counts.values())
        lines.append(
            f"| {name} | {counts['p50']} + {counts['p99']} + {counts['goodput']} = {total} | "
            f"{3 * len(keys)} | {', '.join(p99s)} | {', '.join(p50s) or '-'} |"
        )
    return emit("\n".join(lines) + "\n", args.markdown)


if __name__ == "__main__":
    raise SystemExit(main())
