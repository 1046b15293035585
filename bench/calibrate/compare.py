"""Predicted vs measured: ``lanes sim`` on this host's scenario against a real lab run.

Reads a results folder of ``lanes bench run examples/experiments/calibration.toml`` (the demo
zoo's OCR mix on ``--devices cpu:2 --cpu-threads 1`` under ``independent``, ``fifo`` and
``sjf``), simulates the same policies at the same offered rates on
``examples/scenarios/cpu-2core.toml`` and prints a Markdown table of p50, p99 and goodput,
measured (mean over repeats) and predicted (mean over seeds), with the relative error.

**The model.** Device costs by batch size, batching and the models' own per-request work (the
native zoo's pre- and post-processing, the REST decode and encode) come from
``bench/calibrate/measure.py``, not from this run. The scenario's host (``host.shared_cores``:
the devices are the same two cores as the CPU work; ``host.time_slicing``: the OS shares those
cores among every runnable thread; ``host.handoff_ms``: a thread's wake-up before each request's
CPU phase; ``host.busy_cores``: CPU other work keeps busy all the time) is described in
docs/sim.md. ``lanes serve`` is a Rust data plane: no interpreter lock on the request path, so the
scenario has none (until 2026-11-26 the server was Python and ``[host.interpreter]`` modelled its
GIL; see docs/results/calibration.md).

**What is read off the run** (every run of every variant and level, pooled; no latency or goodput
figure enters, so every p50, p99 and goodput is a prediction):

0. The device costs *in situ* — *measured*, from the run's device timelines (``timelines.json``
   by ``bench/calibrate/timelines.py``), in the ``fifo`` and ``sjf`` runs (there a device runs
   one batch at a time, so a runtime call is not stretched by batches sharing its core; under
   ``independent`` it is, and that is the model's time slicing, not the cost). A cell is one
   run's batches of one model and size, counted with at least 10 batches. Each point of a
   service's cost curve (batch of 1, and each ``batch_ms`` size) becomes the median over runs of
   the cell's median ``measured_ms`` where at least 3 runs have that cell; else the point read
   off at the nearest size below (or above) times the scenario's own ratio between the two
   sizes, the hold taken off its points if the scenario's costs carry it (a scenario without
   ``host.device_hold_ms``; so a scenario written from this script's output comes back
   unchanged); else, with no point read off at all, the scenario's figure x the model's factor
   (the median over its cells of ``measured_ms`` ÷ the scenario's cost at that size: the live
   server's runtime calls run about 1.2x slower than measure.py's native timer, back to back on
   an otherwise idle core). Without ``timelines.json`` the scenario's costs are used as they are.

   The time a device is held beyond its runtime call (``dur - measured_ms`` of every batch: the
   driver and the device thread handing the batch over and back; no core's work) — *measured*,
   as its distribution: ``host.device_hold_ms``, the quantile function whose value at each
   level of timelines.py's ``HOLD_P`` is the median over the same runs of each run's quantile
   at that level (``hold_quantiles_ms``). With ``--hold-median`` (the rule until 2026-11-26)
   every cost point gains the runs' median hold instead, as work.

   The hold of a batch whose device thread finds every core running a call — *measured*, as
   its distribution: ``host.device_hold_busy_ms``, from the ``independent`` runs (six runtimes
   on two cores), the quantile function whose value at each level is the median over the runs
   with at least ``MIN_BUSY`` such batches of each run's quantile of the holds of batches
   dispatched while at least two calls were running (timelines.py's
   ``hold_busy_quantiles_ms``). The simulator draws it, instead of ``device_hold_ms``, for a
   batch dispatched beside n running calls with probability ``min(1, n / 2)`` when the runtimes
   outnumber the cores (docs/sim.md). ``--no-busy-hold`` leaves it out.

1. ``busy_cores`` — *measured*: the machine's busy cores minus the server process's, per run
   (``server.cpu_busy_per_core`` summed, minus ``process_cpu_s / window_s``), median over runs.
   That is the lab's load generators and runner on the same two cores.
2. The server's CPU beyond its devices — *fitted*, least squares over runs with ``a``, ``p``
   and ``q`` at least zero (:func:`least_squares`; unconstrained until round 38, when it gave
   this host's grids a negative cost per request):

       process CPU-s - device work = a * window_s + p * requests + q * batches

   with device work = batches x the scenario's cost curve at the run's mean batch size (requests
   = achieved rate x window, batches = the devices' job count). ``p`` is the server's work per
   request (HTTP, decode, pre, post, encode, the hand-offs between threads); ``q`` the work
   per batch beyond the runtime call (the driver's dispatch and completion; the device
   thread's collate and split are in the cost curve already), spread over a batch's requests
   at the runs' median batch size (the model has no per-batch CPU phase without an
   interpreter). Each service's ``pre`` gains ``p + q / batch`` minus the scenario's mix of
   ``pre + post`` (nothing when that is negative: a scenario that carries them already is left
   as it is). ``a`` is CPU the server spends whatever the load (cores): added to
   ``busy_cores``.
3. ``host.handoff_ms`` — *measured*, from a lone request's latency on open-loop traffic
   (``lone.json`` in the results folder, by ``bench/calibrate/lone.py``: each model alone,
   Poisson, its device about 5 % busy): for each model the wake-ups' mean with which the
   simulator, that model alone at lone.py's rate under ``fifo`` on this scenario (its device
   holds, its exponential wake-ups, ``LONE_SEEDS`` x ``LONE_REQUESTS``), gives lone.py's p50
   (bisection); median over models. (Until 2026-11-26: the p50 beyond ``pre + gpu + post``,
   means, ÷ 2 wake-ups — which took a mean for a median; still the rule with ``--hold-median``.)
   Not the lab's own unloaded latency: that is
   closed loop (each request sent as the last reply arrives), where every thread of the path
   is awake and the client polls for its reply — 0.7-1.5 ms faster per request than the same
   request on its own at a light open-loop rate on this host (lone.py's docstring). Without
   ``lone.json``, that closed-loop figure is used (``p50 / slowdown`` in every run; median over
   models and server starts). The client's own latency is in both.
   **A scenario that carries measured wake-ups** (``host.pre_wake_ms``, ``post_wake_ms``,
   ``client_ms``: read off request spans by ``bench/calibrate/spans.py``, docs/sim.md) keeps
   them, and this rule is not applied (``handoff_ms`` 0): the waits are measured per request
   rather than fitted to lone requests.

4. With the per-thread CPU of a live server (``threads/*.md`` in the results folder, or
   ``--threads DIR``: ``bench/calibrate/threads.py``'s output, each thread's CPU and run delay
   at one rate under ``fifo``, one file per rate, with the lab run's build), rules 0 and 2 split
   a batch's wall time as the threads show it instead. A device thread is on a core for ``cpu /
   (cpu + run delay)`` of its time (*measured*; 0.86 at 600 req/s on this host; a later build's
   device threads: 0.91 at 200, 0.83 at 1,000): each of rule 0's cells (a run's median runtime
   call) is scaled by that share at the run's offered rate (linear between the measured rates)
   before anything else (the hold is not scaled), because the simulated cores add the
   waiting themselves — charged as work too, it counted twice under load. The I/O threads' and
   the other threads' CPU, least squares over the rates as ``a + p * rate`` (*measured*; with one
   rate ``a`` = 0), replace rule 2's ``a`` and ``p``, with ``q`` = 0. The fit of rule 2 is still
   made, and printed, as a check of the split against the runs' process CPU.
   With the calls' own CPU in the timelines (``cpu_ms``, since round 17) rule 0's cells can be
   read off it directly (:func:`in_situ` with ``call_cpu``; ``same_hour.py --call-cpu``): a
   cell is the run's median ``cpu_ms`` of that model and size, no share applied. The share
   read at 600 req/s (0.85) charged the calls 8-25 % less than their own CPU at 200 req/s
   (``char_cnn``'s batch of one 0.49 ms simulated, its wait included, against the lab's 0.61
   of CPU).
5. ``host.slice_ms`` — *measured*, with ``--slices`` only: the slice two threads that both run
   on one core alternate at (``slices.json`` in the results folder, by
   ``bench/calibrate/slices.py``: its ``runs`` p50). Without ``--slices`` the scenario's own
   ``slice_ms`` is kept.

6. ``host.call_preempt_per_ms`` and ``host.call_preempt_ms`` — *measured*, from
   ``sched/*.json`` in the results folder (``bench/calibrate/sched.py``: ``perf sched`` and
   schedstat of a live server at several rates and policies; ``--no-preempt`` leaves them
   out): a device thread's runtime call loses its core to the server's other threads and the
   client — 59-84 % of its switches on this host are preemptions — and waits to get it back
   (p50 0.05 ms, p99 1-2 ms). The rate is its preemptions per ms of its CPU, the waits their
   quantile function (each level the median over runs of the run's quantile); median over
   runs. The simulated call's cost is its CPU (rule 4), so per ms of cost. Processor sharing
   makes a call wait only when more phases are runnable than there are cores — rarely at light
   load, where the lab's device threads already wait 0.11 ms per ms of CPU.
   Read off the calls themselves instead (:func:`call_preemption`, ``same_hour.py
   --preempt-from-calls``; the nineteenth round): the engine policies' runtime calls at the
   grid's lowest level off their core beyond timelines.py's bound, per ms of their CPU, and
   their time off a core as the waits. On round 18's grid that is 0.135 preemptions per ms
   waiting 0.40 ms on average (0.054 ms per ms of CPU, the calls' own 0.05) where sched.py's
   thread-wide figures give 0.99 of 0.13 ms (0.13 ms per ms: the device thread's wake-ups and
   hand-offs between calls are in them, and those are the device hold's already).

Every level and every policy is then simulated with that one scenario (``--fcfs``: with the
cores first come, first served instead of time-sliced, to see what the slicing changes).
``--against DIR...``: the scenario is still read off RESULTS, but the predictions are set
against the runs of these other lab folders instead (their variants and levels, the repeats of
every folder pooled): the calibrated model on measurements it was not read off.
``--max-others CORES``: measured runs whose other threads (the busy cores minus the server
process's: the load generator and anyone else on the machine) used more are left out of the
table (a build beside a run; this host's quiet runs: 0.04-0.13 cores).

Run:  python bench/calibrate/compare.py RESULTS [--scenario FILE] [--seeds 3]
      [--requests 40000] [--fcfs] [--wall-time] [--threads DIR] [--slices] [--hold-median]
      [--no-preempt] [--no-busy-hold] [--against DIR...] [--max-others CORES]
      [--markdown OUT.md]   (``--wall-time``:
      rules 0 and 2 as without rule 4)
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import math
import re
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from lanes import sim
from lanes.lab import capacity, host_noise
from lanes.lab.aggregate import mean_ci
from lanes.sim.scenario import Cost, Scenario, Service

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SCENARIO = ROOT / "examples" / "scenarios" / "cpu-2core.toml"
CORES = 2


def load_runs(results: Path) -> list[dict[str, Any]]:
    """Every grid run of the results folder (probes of a capacity search left out): a ``lanes
    bench run`` folder (``runs/VARIANT/L*-r*.json``) or a saved copy (``VARIANT/L*-r*.json``)."""
    runs = []
    paths = sorted(results.glob("runs/*/L*-r*.json")) or sorted(results.glob("*/L*-r*.json"))
    for path in paths:
        if path.name.endswith(".trace.json"):
            continue
        runs.append(json.loads(path.read_text()))
    if not runs:
        sys.exit(f"compare: {results} holds no run files (runs/VARIANT/L*-r*.json)")
    return runs


def linear(pts: list[tuple[float, float]] | tuple[tuple[float, float], ...], x: float) -> float:
    """``pts`` (ascending in x) at ``x``: linear between points, the nearest one's outside them."""
    if x <= pts[0][0]:
        return pts[0][1]
    for (x0, y0), (x1, y1) in itertools.pairwise(pts):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return pts[-1][1]


@dataclass(frozen=True)
class ThreadLevel:
    """threads.py at one rate: CPU by thread, cores."""

    rate_rps: float
    device_cpu: float
    """The device threads' CPU."""
    device_delay: float
    """The device threads' run delay (runnable, waiting for a core)."""
    io_cores: float
    """The I/O threads' CPU (they also run the hooks)."""
    other_cores: float
    """Every other thread's CPU."""


@dataclass(frozen=True)
class Threads:
    """Rule 4 of the module docs: a live server's CPU by thread, at several rates."""

    levels: tuple[ThreadLevel, ...]
    """By rate."""

    def on_core(self, rate: float) -> float:
        """The device threads' CPU ÷ (CPU + run delay) at ``rate``: linear between the measured
        rates, the nearest one's outside them."""
        pts = [(t.rate_rps, t.device_cpu / (t.device_cpu + t.device_delay)) for t in self.levels]
        return linear(pts, rate)

    def io_fit(self) -> tuple[float, float]:
        """``(a, p)``: least squares of ``I/O + other threads' cores = a + p * rate``; ``a`` in
        cores, ``p`` in ms per request."""
        xs = [t.rate_rps for t in self.levels]
        ys = [t.io_cores + t.other_cores for t in self.levels]
        if len(xs) == 1:
            return 0.0, ys[0] / xs[0] * 1e3
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        p = math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
        p /= math.fsum((x - mx) ** 2 for x in xs)
        return my - p * mx, p * 1e3


def load_threads(folder: Path) -> Threads | None:
    """Every ``*.md`` of ``folder`` (threads.py's output: a ``# ... RATE req/s ...`` head and the
    table ``| name | count | CPU, cores | run delay, cores |``), or ``None`` if there is none."""
    levels = []
    for path in sorted(folder.glob("*.md")):
        text = path.read_text()
        rate = re.search(r"^# .*?(\d[\d,]*) req/s", text, re.M)
        rows = re.findall(r"^\| ([\w-]+)[^|]*\| (\d+) \| ([\d.]+) \| ([\d.]+) \|$", text, re.M)
        if rate is None or not rows:
            sys.exit(f"compare: {path} holds no rate or thread table")
        device = [(float(c), float(d)) for name, _, c, d in rows if name.startswith("lanes-device")]
        io = sum(float(c) for name, _, c, _ in rows if name == "lanes-serve-io")
        other = sum(
            float(c)
            for name, _, c, _ in rows
            if name != "lanes-serve-io" and not name.startswith("lanes-device")
        )
        levels.append(
            ThreadLevel(
                float(rate.group(1).replace(",", "")),
                sum(c for c, _ in device),
                sum(d for _, d in device),
                io,
                other,
            )
        )
    if not levels:
        return None
    return Threads(tuple(sorted(levels, key=lambda t: t.rate_rps)))


@dataclass(frozen=True)
class Fit:
    """What :func:`fit` reads off a run (see the module docs)."""

    busy_cores: float
    """Cores the load generators keep busy (measured)."""
    server_cores: float
    """``a``: server CPU whatever the load, cores."""
    request_ms: float
    """``p``: the server's work per request, ms."""
    batch_ms: float
    """``q``: the server's work per batch beyond the runtime call, ms."""
    batch_size: float
    """The runs' median mean batch size (requests per device job)."""
    handoff_ms: float = 0.0
    """A lone request's latency beyond its modelled work, per wake-up, ms."""
    in_situ: tuple[InSitu, ...] = ()
    """Rule 0: each service's cost curve in the live server."""
    threads: Threads | None = None
    """Rule 4: the split by thread, when it was applied."""
    check: tuple[float, float, float] | None = None
    """Rule 4's check: rule 2's ``(a, p, q)`` with the split's device costs."""
    device_hold: tuple[tuple[float, float], ...] = ()
    """Rule 0: the device hold's quantile function, ``(p, ms)`` (empty: on the costs)."""
    preempt: tuple[float, tuple[tuple[float, float], ...]] = (0.0, ())
    """Rule 6: a runtime call's preemptions per ms of its cost and their waits' quantile
    function, ``(p, ms)`` (0, empty: none)."""
    device_hold_busy: tuple[tuple[float, float], ...] = ()
    """Rule 0: the hold's quantile function onto busy cores, ``(p, ms)`` (empty: none)."""


ENGINE_POLICIES = ("fifo", "sjf")
"""Rule 0 reads the runs of these variants (one batch per device at a time)."""
MIN_BATCHES = 10
"""Rule 0: a (run, model, batch size) cell counts with at least this many batches."""


MIN_RUNS = 3
"""Rule 0: a cost-curve point is read off the timelines when this many runs have its cell."""

MIN_POOLED = 30
"""Rule 0 with ``pooled_ratio``: an unread point takes the grid's own ratio to the point below
when the runs that hold both sizes hold this many batches of it."""


def in_situ(
    timelines: dict[str, Any],
    scenario: Scenario,
    on_core: Callable[[str], float] = lambda run: 1.0,
    *,
    hold_on_cost: bool = False,
    call_cpu: bool = False,
    cost_mean: bool = False,
    pooled_ratio: bool = False,
) -> tuple[InSitu, ...]:
    """Rule 0 of the module docs: each service's measured points, factor and the median hold
    (on every point with ``hold_on_cost``); each cell's runtime call x ``on_core(run)`` (rule
    4), or with ``call_cpu`` the cell's own median CPU per call (timelines.py's ``cpu_ms``:
    rule 4 read off the calls themselves); with ``cost_mean`` as well, a point is the mean CPU
    of all its calls over the runs (each cell's ``cpu_mean_ms`` weighted by its batches), not
    the median over the runs of the cells' medians: the simulator's cost is a mean, and a
    batch's CPU is skewed to the right (the calls of round 19's batches of 8 of ``line_rnn_zh``
    have a mean 4 % above their median).

    ``pooled_ratio`` (the thirtieth round): a point not read off (too few runs with
    :data:`MIN_BATCHES` of its size) is the nearest point set below it (read, or set so, in
    ascending order) times the grid's own ratio between the two sizes, when it has the batches
    (:func:`pooled_ratio_of`), else times the scenario's; instead of the scenario's ratio to the
    nearest point read. The scenario's curve beyond the sizes a grid reads comes from
    measure.py's batches on an idle core; against the lab's own batches of 15 grids it ran
    6-18 % cheap at each step to ``line_rnn_en``'s 4 and 8 and ``char_cnn``'s 16 (docs/results/
    calibration.md, the thirtieth round). Needs ``call_cpu``."""
    if cost_mean and not call_cpu:
        raise ValueError("in_situ: cost_mean reads the calls' own CPU (call_cpu)")
    if pooled_ratio and not call_cpu:
        raise ValueError("in_situ: pooled_ratio reads the calls' own CPU (call_cpu)")
    by_name = {s.name: s for s in scenario.services}
    cells: dict[tuple[str, int], list[float]] = {}
    pooled: dict[tuple[str, int], list[tuple[float, int]]] = {}
    ratios: dict[str, list[float]] = {name: [] for name in by_name}
    holds = []
    for run, t in timelines.items():
        if run.split("/")[0] not in ENGINE_POLICIES:
            continue
        if t.get("hold_ms") is not None:
            holds.append(t["hold_ms"])
        for model, per_size in t["models"].items():
            if model not in by_name:
                continue
            for n, cell in per_size.items():
                if cell["batches"] >= MIN_BATCHES:
                    if call_cpu and "cpu_ms" not in cell:
                        sys.exit(
                            f"compare: {run}'s {model} batches carry no cpu_ms (re-run "
                            "timelines.py on a grid whose slices carry it)"
                        )
                    if cost_mean and "cpu_mean_ms" not in cell:
                        sys.exit(
                            f"compare: {run}'s {model} batches carry no cpu_mean_ms (re-run "
                            "timelines.py)"
                        )
                    ms = cell["cpu_ms"] if call_cpu else cell["measured_ms"] * on_core(run)
                    cells.setdefault((model, int(n)), []).append(ms)
                    if cost_mean:
                        pooled.setdefault((model, int(n)), []).append(
                            (cell["cpu_mean_ms"], cell["batches"])
                        )
                    ratios[model].append(ms / batch_cost(by_name[model], int(n)))
    if not holds or not all(ratios.values()):
        sys.exit(f"compare: the timelines hold no {' or '.join(ENGINE_POLICIES)} batches")
    hold = statistics.median(holds)
    # What the scenario's own costs carry of the hold, taken off before its ratios are read.
    carried = 0.0 if scenario.host.device_hold_ms else hold
    added = hold if hold_on_cost else 0.0
    out = []
    for name, s in by_name.items():
        factor = statistics.median(ratios[name])
        sizes = [1] + ([n for n, _ in s.batching.batch_ms] if s.batching is not None else [])
        read = {
            n: pooled_mean(pooled[(name, n)]) if cost_mean else statistics.median(cells[(name, n)])
            for n in sizes
            if len(cells.get((name, n), [])) >= MIN_RUNS
        }
        points = {}
        for n in sizes:
            if n in read:
                ms = read[n]
            elif read:
                # The scenario's curve from the nearest point read off (below n if any); with
                # pooled_ratio from the nearest point set below (read, or set so), at the grid's
                # own ratio where its batches suffice.
                base = {k: p[0] - added for k, p in points.items()} if pooled_ratio else read
                m = max((k for k in base if k < n), default=min(read))
                own = pooled_ratio_of(timelines, name, n, m) if pooled_ratio else None
                if own is not None:
                    ms = base[m] * own
                else:
                    ms = base[m] * (batch_cost(s, n) - carried) / (batch_cost(s, m) - carried)
            else:
                ms = batch_cost(s, n) * factor
            points[n] = (ms + added, n in read)
        out.append(InSitu(name, factor, added, tuple(sorted(points.items()))))
    return tuple(out)


def pooled_ratio_of(timelines: dict[str, Any], model: str, n: int, m: int) -> float | None:
    """A batch of ``n``'s CPU over a batch of ``m``'s, as the grid's own batches give it.

    **Rule.** Over the engine policies' runs that hold batches of both sizes (any number),
    ``sum(b_n x mean_n) / sum(b_n x mean_m)``: each run's mean CPU (timelines.py's
    ``cpu_mean_ms``) at each size, weighted by its batches of ``n``, so that a run's own speed
    cancels out of the ratio. None when those runs hold fewer than :data:`MIN_POOLED` batches of
    ``n``."""
    num = den = 0.0
    count = 0
    for run, t in timelines.items():
        if run.split("/")[0] not in ENGINE_POLICIES:
            continue
        per_size = t["models"].get(model, {})
        a, b = per_size.get(str(n)), per_size.get(str(m))
        if not a or not b or "cpu_mean_ms" not in a or "cpu_mean_ms" not in b:
            continue
        count += a["batches"]
        num += a["batches"] * a["cpu_mean_ms"]
        den += a["batches"] * b["cpu_mean_ms"]
    return num / den if count >= MIN_POOLED and den > 0 else None


def pooled_mean(cells: list[tuple[float, int]]) -> float:
    """The mean over every call of cells given as ``(mean, count)``."""
    return sum(m * n for m, n in cells) / sum(n for _, n in cells)


def device_hold(timelines: dict[str, Any]) -> tuple[tuple[float, float], ...]:
    """Rule 0's hold distribution: at each level, the median over the engine policies' runs of
    the run's quantile (timelines.py's ``hold_quantiles_ms``)."""
    per_run = [
        t["hold_quantiles_ms"]
        for run, t in timelines.items()
        if run.split("/")[0] in ENGINE_POLICIES and t.get("hold_quantiles_ms")
    ]
    if not per_run:
        sys.exit("compare: the timelines hold no hold_quantiles_ms (re-run timelines.py)")
    return median_quantiles(per_run)


def median_quantiles(per_run: list[list[list[float]]]) -> tuple[tuple[float, float], ...]:
    """At each level of the runs' ``[p, ms]`` quantiles (the same levels in every run), the
    median over the runs."""
    levels = [p for p, _ in per_run[0]]
    return tuple(
        (p, round(statistics.median(q[i][1] for q in per_run), 4)) for i, p in enumerate(levels)
    )


MIN_BUSY = 100
"""Rule 0: a run's holds onto busy cores count when it has at least this many."""


def device_hold_busy(timelines: dict[str, Any]) -> tuple[tuple[float, float], ...]:
    """Rule 0's hold onto busy cores: at each level, the median over the ``independent`` runs
    with at least ``MIN_BUSY`` such batches of the run's quantile (timelines.py's
    ``hold_busy_quantiles_ms``); empty without such runs."""
    per_run = [
        t["hold_busy_quantiles_ms"]
        for run, t in timelines.items()
        if run.split("/")[0] == "independent" and t.get("hold_busy_batches", 0) >= MIN_BUSY
    ]
    return median_quantiles(per_run) if per_run else ()


@dataclass(frozen=True)
class InSitu:
    """Rule 0 for one service: its cost curve in the live server."""

    name: str
    factor: float
    """The live server's runtime calls ÷ measure.py's, median over cells."""
    hold_ms: float
    """The hold on every point (0 unless ``hold_on_cost``)."""
    points: tuple[tuple[int, tuple[float, bool]], ...]
    """``(n, (ms, read off the timelines))``; ms with the hold."""


def preemption(folder: Path) -> tuple[float, tuple[tuple[float, float], ...]]:
    """Rule 6: from sched.py's files in ``folder`` (every run, each policy and rate), a device
    thread's preemptions per ms of its CPU — ``perf sched``'s count of its waits after a
    preemption per second ÷ its CPU (schedstat) — and their waits, each quantile level the
    median over runs of the run's quantile (0 at p = 0, the max at p = 1); median over runs."""
    rates, per_level = [], collections.defaultdict(list)
    for path in sorted(folder.glob("*.json")):
        for run in json.loads(path.read_text())["runs"]:
            waits = run["perf"]["lanes-device"]["preempted_wait_ms"]
            rates.append(preempts_per_ms(run))
            per_level[0.0].append(0.0)
            for key, ms in waits.items():
                if key.startswith("p"):
                    per_level[round(float(key[1:]) / 100, 6)].append(ms)
            per_level[1.0].append(waits["max"])
    if not rates:
        sys.exit(f"compare: {folder} holds no sched.py runs")
    points = tuple((p, round(statistics.median(v), 4)) for p, v in sorted(per_level.items()))
    return round(statistics.median(rates), 3), points


def call_preemption(
    timelines: dict[str, Any], runs: list[dict[str, Any]], rate: float | None = None
) -> tuple[float, tuple[tuple[float, float], ...]]:
    """Rule 6 read off the calls themselves (``same_hour.py --preempt-from-calls``): the engine
    policies' runs at the grid's lowest level (where the shared cores make a call wait least),
    or at offered ``rate``, their runtime calls preempted (timelines.py's ``preempted``: off
    their core beyond its bound) per ms of their CPU, pooled over the runs, and those calls'
    time off a core as the waits (each quantile level the median over the runs)."""
    at = min(r["offered"]["rate_rps"] for r in runs) if rate is None else rate
    keys = {
        r["id"] for r in runs if r["variant"] in ENGINE_POLICIES and r["offered"]["rate_rps"] == at
    }
    blocks = [
        timelines[k]["preempted"] for k in sorted(keys) if "preempted" in timelines.get(k, {})
    ]
    with_waits = [b["quantiles_ms"] for b in blocks if "quantiles_ms" in b]
    if not with_waits:
        sys.exit(
            "compare: no engine-policy run at the lowest level has its calls' preemptions "
            "(timelines.py's preempted: re-run timelines.py on a grid whose slices carry cpu_ms)"
        )
    rate = sum(b["preempted"] for b in blocks) / sum(b["cpu_ms"] for b in blocks)
    return round(rate, 4), median_quantiles(with_waits)


WINDOW_SLACK = 1.1
""":func:`server_cpu` leaves out runs whose server window ran this much longer than their
measurement: until 2026-11-29 the runner's second scrape came once the generators had ended,
up to a second late on this host, and the process's CPU per second of those runs is diluted."""


def server_cpu(runs: list[dict[str, Any]], timelines: dict[str, Any]) -> tuple[float, float]:
    """Rule 2 with the calls' own CPU (``same_hour.py --server-cpu``): per run, the server
    process's cores beyond its runtime calls' (``process_cpu_s / window_s`` less timelines.py's
    ``preempted`` ``cpu_ms / span_s``), least squares over the runs as ``a + p * rate``;
    ``(a, p)`` with ``a`` in cores and ``p`` in ms per request; runs whose window ran long
    (:data:`WINDOW_SLACK`) left out. On this host the server's CPU per request beyond the
    calls falls with the load (round 18's grid, its runs of a 5 s window: 0.49 ms at 200
    req/s, 0.30 at 900 under ``fifo``)."""
    xs, ys = [], []
    for r in runs:
        block = timelines.get(r["id"], {}).get("preempted")
        s = r["server"]
        if not block or not block.get("span_s") or not s.get("window_s"):
            continue
        if s["window_s"] > WINDOW_SLACK * r["measure_s"]:
            continue  # a window that ran past the load (the runner before 2026-11-29)
        calls = block["cpu_ms"] / block["span_s"] / 1e3
        xs.append(r["load"]["achieved_rps"])
        ys.append(s["process_cpu_s"] / s["window_s"] - calls)
    if len(xs) < 3:
        sys.exit(
            "compare: fewer than 3 runs carry their calls' CPU (re-run timelines.py on a grid "
            "whose slices carry cpu_ms)"
        )
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    p = math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    p /= math.fsum((x - mx) ** 2 for x in xs)
    return round(my - p * mx, 4), round(p * 1e3, 4)


def preempts_per_ms(run: dict[str, Any]) -> float:
    """One sched.py run's preemptions of a device thread per ms of its CPU (rule 6)."""
    waits = run["perf"]["lanes-device"]["preempted_wait_ms"]
    cpu_ms_per_s = run["schedstat"]["server"]["lanes-device"]["cpu_cores"] * 1e3
    return float(waits["n"] / run["perf_s"] / cpu_ms_per_s)


def preempt_rates(folder: Path) -> tuple[tuple[float, float], ...]:
    """Rule 6 by offered rate: ``(req/s, preemptions per ms of CPU)``, the median over
    sched.py's runs in ``folder`` at each rate (every policy)."""
    by_rate = collections.defaultdict(list)
    for path in sorted(folder.glob("*.json")):
        for run in json.loads(path.read_text())["runs"]:
            by_rate[float(run["rate"])].append(preempts_per_ms(run))
    if not by_rate:
        sys.exit(f"compare: {folder} holds no sched.py runs")
    return tuple((r, round(statistics.median(v), 3)) for r, v in sorted(by_rate.items()))


def with_costs(scenario: Scenario, costs: tuple[InSitu, ...]) -> Scenario:
    """``scenario`` with each service's device cost curve as rule 0 found it."""
    by_name = {c.name: dict(c.points) for c in costs}
    services = []
    for s in scenario.services:
        points = by_name.get(s.name)
        if points is None:
            services.append(s)
            continue
        gpu = Cost(s.gpu.dist, points[1][0], s.gpu.cv)
        batching = s.batching
        if batching is not None:
            curve = tuple((n, points[n][0]) for n, _ in batching.batch_ms)
            batching = replace(batching, batch_ms=curve)
        services.append(replace(s, gpu=gpu, batching=batching))
    return replace(scenario, services=tuple(services))


def fit(
    runs: list[dict[str, Any]],
    scenario: Scenario,
    timelines: dict[str, Any] | None = None,
    lone: dict[str, Any] | None = None,
    threads: Threads | None = None,
    *,
    hold_median: bool = False,
    preempt: tuple[float, tuple[tuple[float, float], ...]] = (0.0, ()),
    busy_hold: bool = True,
    call_cpu: bool = False,
    cost_mean: bool = False,
    pooled_ratio: bool = False,
) -> Fit:
    """The run's figures the model takes, by the rules in the module docs; ``scenario`` has
    measure.py's device costs (rule 0 scales them when ``timelines`` are given; rule 3 reads
    ``lone`` when given; rule 4 splits them by ``threads`` when given; rule 6's ``preempt``
    enters the scenario, and rule 3's fit with it; ``call_cpu``: rule 0's cells are the calls'
    own CPU, and ``cost_mean`` their mean, ``pooled_ratio`` the unread points' ratio, see
    :func:`in_situ`)."""
    costs: tuple[InSitu, ...] = ()
    hold: tuple[tuple[float, float], ...] = ()
    hold_busy: tuple[tuple[float, float], ...] = ()
    if timelines:
        share = (lambda run: 1.0) if threads is None else threads.on_core
        rates = {r["id"]: r["offered"]["rate_rps"] for r in runs}
        costs = in_situ(
            timelines,
            scenario,
            lambda run: share(rates[run]),
            hold_on_cost=hold_median,
            call_cpu=call_cpu,
            cost_mean=cost_mean,
            pooled_ratio=pooled_ratio,
        )
        scenario = with_costs(scenario, costs)
        if not hold_median:
            hold = device_hold(timelines)
            if busy_hold:
                hold_busy = device_hold_busy(timelines)
    others, rows, ys, sizes = [], [], [], []
    for r in runs:
        s = r["server"]
        cpu, window = s.get("process_cpu_s"), s.get("window_s")
        jobs = sum(d["jobs"] for d in s["device"].values())
        if cpu is None or not window or not jobs:
            continue
        if s.get("cpu_busy_per_core"):
            others.append(sum(s["cpu_busy_per_core"]) - cpu / window)
        requests = r["load"]["achieved_rps"] * window
        device_s = jobs * mix_batch_cost(scenario, requests / jobs) / 1e3
        rows.append((window, requests, jobs))
        ys.append(cpu - device_s)
        sizes.append(requests / jobs)
    if len(rows) < 3 or not others:
        sys.exit("compare: the run needs server CPU figures (process_cpu_s, cpu_busy_per_core)")
    a, p, q = least_squares(rows, ys)
    f = Fit(
        max(0.0, statistics.median(others)),
        a,
        p * 1e3,
        q * 1e3,
        statistics.median(sizes),
        in_situ=costs,
        device_hold=hold,
        preempt=preempt,
        device_hold_busy=hold_busy,
    )
    if threads is not None:
        io_a, io_p = threads.io_fit()
        f = replace(
            f,
            server_cores=max(0.0, io_a),
            request_ms=io_p,
            batch_ms=0.0,
            threads=threads,
            check=(a, p * 1e3, q * 1e3),
        )
    if measured_wakes(scenario):
        return replace(f, handoff_ms=0.0)
    scaled = calibrated(scenario, replace(f, in_situ=()))
    if lone is not None and not hold_median:
        return replace(f, handoff_ms=lone_handoff_ms(scaled, lone))
    return replace(f, handoff_ms=handoff_ms(runs, scaled, lone))


def measured_wakes(scenario: Scenario) -> bool:
    """Whether ``scenario`` carries measured wake-ups (rule 3's exception)."""
    h = scenario.host
    return bool(h.pre_wake_ms or h.post_wake_ms)


LONE_SEEDS = (1, 2, 3)
LONE_REQUESTS = 4000
"""Rule 3: each lone model's simulation (mean of the seeds' p50s)."""


def lone_p50(scenario: Scenario, name: str, rate: float, wake_ms: float) -> float:
    """The simulator's p50 of service ``name`` alone at ``rate`` req/s under ``fifo``, with
    wake-ups of mean ``wake_ms``, ms."""
    alone = replace(
        scenario,
        host=replace(scenario.host, handoff_ms=wake_ms),
        services=tuple(replace(s, share=1.0) for s in scenario.services if s.name == name),
    )
    res = sim.run(
        alone, ["fifo"], [rate / scenario_rate(alone)], seeds=LONE_SEEDS, requests=LONE_REQUESTS
    )
    return statistics.mean(p["latency_ms"]["p50"] for p in res.points)


def lone_handoff_ms(scenario: Scenario, lone: dict[str, Any]) -> float:
    """Rule 3 of the module docs: per model the wake-ups' mean that gives lone.py's p50 in the
    simulator (bisection to 1 µs; p50 rises with it), median over models."""
    fitted = []
    for name, m in lone["models"].items():
        rate = lone["rates"][name]
        lo, hi = 0.0, 5.0
        if lone_p50(scenario, name, rate, lo) >= m["p50_ms"]:
            fitted.append(lo)
            continue
        while hi - lo > 1e-3:
            mid = (lo + hi) / 2
            if lone_p50(scenario, name, rate, mid) < m["p50_ms"]:
                lo = mid
            else:
                hi = mid
        fitted.append((lo + hi) / 2)
    return statistics.median(fitted)


def handoff_ms(
    runs: list[dict[str, Any]], scenario: Scenario, lone: dict[str, Any] | None = None
) -> float:
    """Rule 3 of the module docs without the simulation (``--hold-median``, or with no
    ``lone.json`` the closed-loop figure): a lone request's p50 beyond the model's work, per
    wake-up."""
    model = {s.name: s.pre.mean_ms + s.gpu.mean_ms + s.post.mean_ms for s in scenario.services}
    if lone is not None:
        gaps = [(m["p50_ms"] - model[name]) / 2 for name, m in lone["models"].items()]
        return max(0.0, statistics.median(gaps))
    unloaded: dict[tuple[str, int, str], float] = {}
    for r in runs:
        for name, m in r["load"]["models"].items():
            if m.get("slowdown"):
                key = (r["variant"], r["repeat"], name)
                unloaded[key] = m["latency_ms"]["p50"] / m["slowdown"]
    gaps = [(ms - model[key[2]]) / 2 for key, ms in unloaded.items() if key[2] in model]
    if not gaps:
        sys.exit("compare: the run has no unloaded latencies (load.models.*.slowdown)")
    return max(0.0, statistics.median(gaps))


def least_squares(rows: list[tuple[float, float, float]], ys: list[float]) -> list[float]:
    """``x >= 0`` minimising ``|rows x - ys|``: non-negative least squares (rule 2).

    The rule: the optimum is the unconstrained least-squares fit (``numpy.linalg.lstsq``) on
    the unknowns it leaves above zero, with the others at zero; so among the fits on every
    subset of the unknowns (seven for three, and all at zero) it is the one with no negative
    coefficient and the least residual. Each unknown is a cost the server pays (cores, ms a
    request, ms a batch), never below zero; the unconstrained fit gave grid 213 a per-request
    cost of -0.25 ms and a constant of 0.29 cores to make up for it (round 38)."""
    a = np.asarray(rows, dtype=float)
    y = np.asarray(ys, dtype=float)
    n = a.shape[1]
    best, best_res = np.zeros(n), float(y @ y)
    for k in range(1, n + 1):
        for cols in itertools.combinations(range(n), k):
            sol = np.linalg.lstsq(a[:, cols], y, rcond=None)[0]
            if (sol < 0).any():
                continue
            x = np.zeros(n)
            x[list(cols)] = sol
            res = float(np.sum((a @ x - y) ** 2))
            if res < best_res:
                best, best_res = x, res
    return [float(v) for v in best]


def hold_mean(points: tuple[tuple[float, float], ...]) -> float:
    """The mean of the quantile function through ``points`` (linear between them), ms."""
    return math.fsum((p1 - p0) * (x0 + x1) / 2 for (p0, x0), (p1, x1) in itertools.pairwise(points))


def mix_batch_cost(scenario: Scenario, size: float) -> float:
    """The mix's mean device cost of a batch of ``size``, ms."""
    total = sum(s.share for s in scenario.services)
    return sum(s.share / total * batch_cost(s, size) for s in scenario.services)


def batch_cost(service: Service, n: float) -> float:
    """The service's mean cost of a batch of ``n`` (docs/sim.md, "Batching"), ms."""
    points = [(1.0, service.gpu.mean_ms)]
    if service.batching is not None:
        points += [(float(k), ms) for k, ms in service.batching.batch_ms]
    if len(points) == 1:
        return service.gpu.mean_ms * n
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if n <= x1:
            return y0 + (y1 - y0) * (n - x0) / (x1 - x0)
    (x0, y0), (x1, y1) = points[-2], points[-1]
    return y0 + (y1 - y0) * (n - x0) / (x1 - x0)


def calibrated(
    scenario: Scenario,
    f: Fit,
    *,
    slicing: bool = True,
    handoff_dist: str = "exponential",
    slice_ms: float | None = None,
) -> Scenario:
    """``scenario`` (measure.py's costs) on shared, time-sliced (or with ``slicing`` false,
    queued-for) cores with the run's figures ``f``; ``slice_ms`` (rule 5) when given, else the
    scenario's own."""
    if f.in_situ:
        scenario = with_costs(scenario, f.in_situ)
    mix = sum(s.share * (s.pre.mean_ms + s.post.mean_ms) for s in scenario.services)
    extra = max(0.0, f.request_ms + f.batch_ms / max(1.0, f.batch_size) - mix)
    services = []
    for s in scenario.services:
        services.append(replace(s, pre=Cost(s.pre.dist, s.pre.mean_ms + extra, s.pre.cv)))
    host = replace(
        scenario.host,
        shared_cores=True,
        time_slicing=slicing,
        busy_cores=f.busy_cores + f.server_cores,
        handoff_ms=f.handoff_ms,
        handoff_dist=handoff_dist,
        interpreter=None,
        slice_ms=(scenario.host.slice_ms if slice_ms is None else slice_ms) if slicing else 0.0,
        device_hold_ms=f.device_hold,
        call_preempt_per_ms=f.preempt[0],
        call_preempt_ms=f.preempt[1],
        device_hold_busy_ms=f.device_hold_busy if slicing else (),
    )
    return replace(scenario, host=host, services=tuple(services))


def scenario_lines(scenario: Scenario) -> str:
    """The calibrated figures as scenario TOML lines (host keys, then each service's costs)."""
    h = scenario.host
    lines = [
        f"busy_cores = {h.busy_cores:.3f}",
        f"handoff_ms = {h.handoff_ms:.3f}"
        + (" (measured wake-ups: pre_wake_ms, post_wake_ms, client_ms)" if h.pre_wake_ms else ""),
        f"time_slicing = {str(h.time_slicing).lower()}",
        f"slice_ms = {h.slice_ms:g}",
        "device_hold_ms = [" + ", ".join(f"[{p:g}, {ms:.4g}]" for p, ms in h.device_hold_ms) + "]",
    ]
    if h.call_preempt_per_ms:
        lines.append(f"call_preempt_per_ms = {h.call_preempt_per_ms:g}")
        points = ", ".join(f"[{p:g}, {ms:.4g}]" for p, ms in h.call_preempt_ms)
        lines.append(f"call_preempt_ms = [{points}]")
    if h.device_hold_busy_ms:
        points = ", ".join(f"[{p:g}, {ms:.4g}]" for p, ms in h.device_hold_busy_ms)
        lines.append(f"device_hold_busy_ms = [{points}]")
    for s in scenario.services:
        lines.append(f"# {s.name}")
        for key in ("pre", "gpu", "post"):
            c = getattr(s, key)
            lines.append(f"{key} = {{ mean_ms = {c.mean_ms:.4g}, cv = {c.cv:.2f} }}")
        if s.batching is not None:
            pts = ", ".join(f"[{n}, {ms:.4g}]" for n, ms in s.batching.batch_ms)
            lines.append(f"batch_ms = [{pts}]")
    return "\n".join(lines)


def others_cores(run: dict[str, Any]) -> float:
    """The cores a run's other threads used: the host's busy cores minus the server process's
    (the load generator, the lab, anyone else on the machine)."""
    s = run["server"]
    return sum(s["cpu_busy_per_core"]) - s["process_cpu_s"] / s["window_s"]


def undisturbed(runs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """``runs`` without those the rest of the host disturbed (lanes.lab.host_noise: other
    processes and steal at >= ``DISTURBED_CORES`` cores over the window), and a phrase saying
    how many were dropped and how many carry no host-noise reading (grids run before it)."""
    kept = [r for r in runs if host_noise.disturbed(r.get("server")) is None]
    unread = sum(1 for r in runs if (r.get("server") or {}).get("other_cores") is None)
    phrase = f"without the {len(runs) - len(kept)} runs of {len(runs)} the host disturbed"
    if unread:
        phrase += f" ({unread} carry no host-noise reading and stay)"
    return kept, phrase


def measured(runs: list[dict[str, Any]]) -> dict[tuple[str, float], dict[str, float]]:
    """(variant, offered rps) → mean over repeats of p50, p99, goodput; each with the repeats'
    range (``_lo``, ``_hi``) and the mean's 95 % t confidence interval (``_ci_lo``,
    ``_ci_hi``: lanes.lab.aggregate.mean_ci, the lab report's rule; the mean itself for one
    repeat); and ``attainment``, the runs' mean SLO attainment (NaN when they carry none)."""
    groups: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault((r["variant"], r["offered"]["rate_rps"]), []).append(r["load"])
    out: dict[tuple[str, float], dict[str, float]] = {}
    for key, loads in groups.items():
        figures = {
            "p50": [x["latency_ms"]["p50"] for x in loads],
            "p99": [x["latency_ms"]["p99"] for x in loads],
            "goodput": [x["goodput_rps"] for x in loads],
        }
        row: dict[str, float] = {"repeats": len(loads)}
        attained = [x["slo_attainment"] for x in loads if x.get("slo_attainment") is not None]
        row["attainment"] = statistics.mean(attained) if attained else math.nan
        for name, xs in figures.items():
            row[name] = statistics.mean(xs)
            row[name + "_lo"], row[name + "_hi"] = min(xs), max(xs)
            ci = mean_ci(xs)
            assert ci is not None  # a group holds at least one run
            row[name + "_ci_lo"], row[name + "_ci_hi"] = ci[1]
        out[key] = row
    return out


WARM_SHARE = 0.05
"""The share of a simulated run's arrivals the simulator leaves out as warm-up (stats.rs)."""


def predicted(
    scenario: Scenario,
    variants: list[str],
    rates: list[float],
    seeds: int,
    requests: int,
    window_s: float | None = None,
) -> dict[tuple[str, float], dict[str, float]]:
    """The simulator at the same offered rates: mean over seeds of ``p50``, ``p99`` and
    ``goodput`` (per second of the sending window, as the lab's ``good / measure_s``: the
    simulator's rule since the thirty-third round, docs/sim.md). Besides: ``cpu_idle``, the share
    of core time left idle; ``gpu_busy``, the devices' busy share; and ``wait_per_ms:NAME`` for
    each service NAME, how long its runtime calls waited per ms of their cost (``call_ms /
    call_cost_ms - 1``, the lab's ``off_per_cpu`` when the costs are CPU time).

    With ``window_s`` (the twenty-fourth round) each seed is one run as long as a lab window
    instead of ``requests`` long: ``rate x window_s / (1 - WARM_SHARE)`` arrivals, so that its
    measured part lasts ``window_s``. The figures are then the mean over ``seeds`` windows, as
    the lab's are the mean over its runs' windows: a host whose speed changes between windows
    (``host.speed_ms`` of seconds) makes some windows slow, as it makes some lab runs slow."""
    per_load = scenario_rate(scenario)
    loads = [rate / per_load for rate in rates]
    seed_list = list(range(1, seeds + 1))
    if window_s is None:
        res = sim.run(scenario, variants, loads, seeds=seed_list, requests=requests)
        points = list(res.points)
    else:
        points = []
        for rate, load in zip(rates, loads, strict=True):
            n = max(1, round(rate * window_s / (1 - WARM_SHARE)))
            points += sim.run(scenario, variants, [load], seeds=seed_list, requests=n).points
    out = {}
    for variant in variants:
        for rate, load in zip(rates, loads, strict=True):
            pts = [p for p in points if p["policy"] == variant and abs(p["load"] - load) < 1e-9]
            out[(variant, rate)] = {
                "p50": statistics.mean(p["latency_ms"]["p50"] for p in pts),
                "p99": statistics.mean(p["latency_ms"]["p99"] for p in pts),
                "goodput": statistics.mean(p["goodput_rps"] for p in pts),
                "cpu_idle": statistics.mean(p["cpu_idle"] for p in pts),
                "gpu_busy": statistics.mean(p["gpu_busy"] for p in pts),
            } | {
                f"wait_per_ms:{svc.name}": statistics.mean(
                    call_wait(p["services"][svc.name]) for p in pts
                )
                for svc in scenario.services
            }
    return out


def call_wait(service: dict[str, Any]) -> float:
    """How long a simulated service's runtime calls waited per ms of their cost (0: none ran)."""
    cost = service["call_cost_ms"]
    return service["call_ms"] / cost - 1.0 if cost > 0 else 0.0


def scenario_rate(scenario: Scenario) -> float:
    """Requests/s at load 1.0 (``lanes sim``'s rule: GPUs busy if every request ran alone)."""
    total = sum(s.share for s in scenario.services)
    mean_gpu = sum(s.share / total * s.gpu.mean_ms for s in scenario.services)
    return scenario.host.gpus * 1000.0 / mean_gpu


KNEE = 0.90
"""A level is below the knee when its measured goodput is at least this share of the offer."""
TARGET = 0.15
"""Issue 15's target: predictions within this share of the measurement up to the knee."""
KNEES = ("goodput", "capacity")
"""How :func:`summary` reads "up to the knee": ``goodput``, every level whose measured goodput
is at least :data:`KNEE` of the offer (the rule since the first round); ``capacity`` (the
thirty-ninth round), every level up to the lab's own capacity at SLO, read off the grid the
lab's way (lanes.lab.capacity: the highest level whose runs' mean SLO attainment is at least
99 %), and no level above it, met or not."""


def below_knee(
    meas: dict[tuple[str, float], dict[str, float]], variant: str, knee: str = "goodput"
) -> list[tuple[str, float]]:
    """The variant's levels up to the knee by the rule ``knee`` names (:data:`KNEES`), in
    ascending order."""
    keys = [k for k in sorted(meas) if k[0] == variant]
    if knee == "goodput":
        return [k for k in keys if meas[k]["goodput"] >= KNEE * k[1]]
    if knee != "capacity":
        raise ValueError(f"knee {knee!r}: allowed: {', '.join(KNEES)}")
    low = capacity.bracket((k[1], capacity.meets(meas[k]["attainment"])) for k in keys).low
    return [] if low is None else [k for k in keys if k[1] <= low]


def knee_phrase(knee: str) -> str:
    """The summary's heading for the rule ``knee`` names."""
    if knee == "capacity":
        return (
            "up to the lab's capacity at SLO (levels up to the highest whose runs' mean SLO "
            f"attainment is >= {capacity.SLO_TARGET:.0%})"
        )
    return f"below the knee (measured goodput >= {KNEE:.0%} of the offer)"


def summary(
    meas: dict[tuple[str, float], dict[str, float]],
    pred: dict[tuple[str, float], dict[str, float]],
    knee: str = "goodput",
) -> str:
    """Per variant, the relative errors' range over the levels up to the knee (``knee``: which
    rule, :data:`KNEES`), how many predictions fall within the repeats' own range, how many
    within ``TARGET``, and how many within ``TARGET`` or inside the 95 % confidence interval of
    the measured mean (a mean the lab itself knows only to ±40 % cannot tell a 15 % miss from
    its own noise; with one repeat per level that is ``TARGET`` alone)."""
    lines = [f"{knee_phrase(knee)}:"]
    for variant in sorted({k[0] for k in meas}):
        keys = below_knee(meas, variant, knee)
        if not keys:
            continue
        parts = []
        for name in ("p50", "p99", "goodput"):
            errs = [(pred[k][name] - meas[k][name]) / meas[k][name] * 100 for k in keys]
            inside = sum(
                meas[k][name + "_lo"] <= pred[k][name] <= meas[k][name + "_hi"] for k in keys
            )
            near = sum(abs(e) <= TARGET * 100 for e in errs)
            near_or_ci = sum(
                abs(e) <= TARGET * 100
                or meas[k][name + "_ci_lo"] <= pred[k][name] <= meas[k][name + "_ci_hi"]
                for e, k in zip(errs, keys, strict=True)
            )
            parts.append(
                f"{name} {min(errs):+.0f} to {max(errs):+.0f} % ({inside}/{len(keys)} in range, "
                f"{near}/{len(keys)} within {TARGET:.0%}, "
                f"{near_or_ci}/{len(keys)} in the mean's 95% CI or within {TARGET:.0%})"
            )
        rates = ", ".join(f"{k[1]:.0f}" for k in keys)
        lines.append(f"- {variant} ({rates} req/s): " + "; ".join(parts))
    return "\n".join(lines) + "\n"


def error(pred: float, meas: float) -> str:
    if meas == 0:
        return "n/a"
    return f"{(pred - meas) / meas * 100:+.0f} %"


def table(
    meas: dict[tuple[str, float], dict[str, float]],
    pred: dict[tuple[str, float], dict[str, float]],
) -> str:
    head = (
        "| variant | offered/s | p50 ms meas [repeats] / sim | err | p99 ms meas [repeats] / sim "
        "| err | goodput/s meas [repeats] / sim | err |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    rows = []
    for key in sorted(meas, key=lambda k: (k[0], k[1])):
        m, p = meas[key], pred[key]
        cells = []
        for name, fmt in (("p50", ".1f"), ("p99", ".1f"), ("goodput", ".0f")):
            cells.append(
                f"{m[name]:{fmt}} [{m[name + '_lo']:{fmt}}-{m[name + '_hi']:{fmt}}] / "
                f"{p[name]:{fmt}} | {error(p[name], m[name])}"
            )
        rows.append(f"| {key[0]} | {key[1]:.0f} | " + " | ".join(cells) + " |")
    return head + "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="a lanes bench run results folder")
    ap.add_argument("--scenario", type=Path, default=DEFAULT_SCENARIO)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=40_000)
    ap.add_argument("--markdown", type=Path, help="also write the table here")
    ap.add_argument(
        "--fcfs", action="store_true", help="cores first come, first served, not time-sliced"
    )
    ap.add_argument(
        "--wall-time", action="store_true", help="rules 0 and 2 without threads/ (rule 4)"
    )
    ap.add_argument(
        "--threads", type=Path, help="rule 4's folder of threads.py outputs (RESULTS/threads)"
    )
    ap.add_argument("--slices", action="store_true", help="host.slice_ms from slices.json (rule 5)")
    ap.add_argument(
        "--no-preempt",
        action="store_true",
        help="rule 6 off: no preemptions of the runtime calls (the scenario until 2026-11-27)",
    )
    ap.add_argument(
        "--no-busy-hold",
        action="store_true",
        help="no hold onto busy cores (host.device_hold_busy_ms; the scenario until 2026-11-27)",
    )
    ap.add_argument(
        "--against",
        type=Path,
        nargs="+",
        help="measure against these lab folders' runs instead (the scenario still from RESULTS)",
    )
    ap.add_argument(
        "--max-others",
        type=float,
        help="leave out measured runs whose other threads used more cores than this",
    )
    ap.add_argument(
        "--hold-median",
        action="store_true",
        help="rules 0 and 3 as until 2026-11-26: the median hold on the costs, no distribution",
    )
    args = ap.parse_args(argv)
    runs = load_runs(args.results)
    base = Scenario.load(args.scenario)
    tl = args.results / "timelines.json"
    timelines = json.loads(tl.read_text()) if tl.exists() else None
    lone_file = args.results / "lone.json"
    lone = json.loads(lone_file.read_text()) if lone_file.exists() else None
    threads = None if args.wall_time else load_threads(args.threads or args.results / "threads")
    sched_dir = args.results / "sched"
    preempt = (0.0, ()) if args.no_preempt or not sched_dir.is_dir() else preemption(sched_dir)
    f = fit(
        runs,
        base,
        timelines,
        lone,
        threads,
        hold_median=args.hold_median,
        preempt=preempt,
        busy_hold=not args.no_busy_hold,
    )
    slice_ms = None
    if args.slices:
        slices_file = args.results / "slices.json"
        if not slices_file.exists():
            sys.exit(f"compare: --slices needs {slices_file} (bench/calibrate/slices.py)")
        slice_ms = json.loads(slices_file.read_text())["runs"]["p50_ms"]
    scenario = calibrated(base, f, slicing=not args.fcfs, slice_ms=slice_ms)
    against = runs if not args.against else [r for d in args.against for r in load_runs(d)]
    if args.max_others is not None:
        against = [r for r in against if others_cores(r) <= args.max_others]
    meas = measured(against)
    variants = sorted({k[0] for k in meas})
    rates = sorted({k[1] for k in meas})
    pred = predicted(scenario, variants, rates, args.seeds, args.requests)
    cores = "first come, first served" if args.fcfs else "time-sliced"
    head = (
        f"read off the run: load generators {f.busy_cores:.3f} cores (measured); server "
        f"{f.server_cores:.3f} cores + {f.request_ms:.3f} ms per request + {f.batch_ms:.3f} ms "
        f"per batch (median batch {f.batch_size:.2f}) beyond its devices "
        f"({'measured by thread, rule 4' if f.threads else 'fitted'}); thread "
        + (
            "wake-ups measured per request (the scenario's pre_wake_ms, post_wake_ms). "
            if measured_wakes(base)
            else f"wake-up {f.handoff_ms:.3f} ms (measured, "
            f"{'lone.json' if lone else 'closed loop'}). "
        )
        + f"Scenario {args.scenario.name} with shared "
        f"{cores} cores, busy_cores {scenario.host.busy_cores:.3f}, pre + "
        f"{scenario.services[0].pre.mean_ms - base.services[0].pre.mean_ms:.3f} ms; "
        f"{args.seeds} seeds x {args.requests} requests"
    )
    if args.against:
        head += "; measured: the runs of " + ", ".join(str(d) for d in args.against)
    if args.max_others is not None:
        head += f", those whose other threads used at most {args.max_others:g} cores"
    if f.threads is not None and f.check is not None:
        a, p, q = f.check
        shares = ", ".join(
            f"{t.rate_rps:.0f} req/s {f.threads.on_core(t.rate_rps):.3f}" for t in f.threads.levels
        )
        head += (
            f"; split by thread: device threads on a core ({shares}), I/O and other threads "
            f"{f.server_cores:.3f} cores + {f.request_ms:.3f} ms per request (rule 2's fit with "
            f"these device costs, a check: {a:.3f} cores + {p:.3f} ms per request + {q:.3f} ms "
            f"per batch)"
        )
    if f.in_situ:
        head += (
            "; device costs in situ (timelines): "
            + ", ".join(
                f"{c.name} x{c.factor:.3f} (points read off: "
                + ", ".join(str(n) for n, (_, read) in c.points if read)
                + ")"
                for c in f.in_situ
            )
            + (
                f", + {f.in_situ[0].hold_ms:.3f} ms held per batch"
                if args.hold_median
                else f"; held per batch beyond the call: mean {hold_mean(f.device_hold):.3f} ms, "
                + ", ".join(f"p{p * 100:g} {ms:g}" for p, ms in f.device_hold if 0.5 <= p < 1)
                + " (device_hold_ms)"
            )
        )
    if f.preempt[0]:
        head += (
            f"; runtime calls preempted {f.preempt[0]:g} times per ms of cost, each waiting mean "
            f"{hold_mean(f.preempt[1]):.3f} ms, "
            + ", ".join(f"p{p * 100:g} {ms:g}" for p, ms in f.preempt[1] if 0.5 <= p < 1)
            + " (sched.py, rule 6)"
        )
    if f.device_hold_busy:
        head += (
            f"; a batch's device thread finding every core running a call holds its device mean "
            f"{hold_mean(f.device_hold_busy):.3f} ms, "
            + ", ".join(f"p{p * 100:g} {ms:g}" for p, ms in f.device_hold_busy if 0.5 <= p < 1)
            + " (independent runs' timelines, device_hold_busy_ms)"
        )
    head += "\n\n" + scenario_lines(scenario)
    return emit(f"{head}\n\n{table(meas, pred)}\n{summary(meas, pred)}", args.markdown)


def emit(text: str, markdown: Path | None) -> int:
    """Prints ``text`` and, when given, writes it to ``markdown``; the exit status."""
    print(text)
    if markdown:
        markdown.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
