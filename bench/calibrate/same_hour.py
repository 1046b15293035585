"""A scenario per host state: everything the simulator is given read off the one lab grid it
is then set against (the eleventh round, docs/results/calibration.md).

The committed scenario (examples/scenarios/cpu-2core.toml) takes its device costs from one
day's grid and its wake-ups and client part from another's spans; this host's speed moves by
more than the target between such grids. Here a grid run with ``--trace-requests`` (its
``timelines.json`` by timelines.py and its spans) gives all of them, and no latency or goodput
figure of the grid enters:

- the device costs, the holds and the busy-core holds: compare.py's rules 0 and 1 (in situ,
  from the fifo/sjf runs' device timelines), rule 2's busy cores; rule 4 (per-thread CPU) when
  the folder has ``threads/`` (unless ``--wall-time``), else the calls' wall time; the
  calls' preemptions from ``sched/`` when present, else the scenario's own (measured by
  sched.py on an earlier day, and said so), or none with ``--no-preempt``;
- ``host.pre_wake_ms``, ``host.post_wake_ms``: the lowest level's waits (spans.py ``--json``),
  each quantile the mean over the variants of its pooled quantile (the ninth round's rule);
- ``host.client_ms``: the lowest level's client part (client latency quantile minus the spans'
  total quantile, per variant and model), the median over variants and models at p50, p90 and
  p99, less :data:`variants.IO_EXTRA` — the I/O threads' reading and writing of each request,
  which every ``pre`` already runs as CPU — floored at 0; 0 at p0 and 1.5x p99 at p100.

The twelfth round's model (both flags together are its scenario):

- ``--busy-wakes``: the wake-ups by the runtime calls running at their start
  (busy_wakes.py): ``pre_wake_ms``/``post_wake_ms`` those beside no call at the lowest level,
  ``pre_wake_busy_ms``/``post_wake_busy_ms`` those while the calls held every core, at every
  level;
- ``--deconvolved``: ``client_ms`` the distribution that, added to each request's server time,
  gives the client's quantiles at the lowest level (client_part.py), instead of the
  differences of quantiles.

``--run-queues`` (the thirteenth round): the cores keep a run queue each, as Linux's do
(``host.run_queues``), instead of processor sharing over both.

A grid may also hold ``default`` (``lanes serve``'s default on these devices, the fourteenth
round): it is simulated as against_demo.py simulates the demo's (:data:`AS_SIMULATED`: the CPU
policy with two batches of each model in flight). Nothing is read off its runs, which only
``--against`` sets the scenario against: the grid read must hold ``fifo``, ``sjf`` and
``independent`` alone, as the earlier rounds' (give it a folder of those variants' runs).

``--preempt-by-level`` (the fourteenth round): the calls' preemption rate at each offered rate
interpolated between sched.py's rates (compare.py's ``preempt_rates``, linear, the nearest
outside) instead of one median for every load; needs ``sched/``.

``--call-stretch lossy|weighted`` (the fourteenth round): ``independent``'s runtime calls slow
each other by the ninth round's measured table (``host.call_stretch`` = variants.py's
``STRETCH``), as a loss (the tenth round's form) or as a share of cores that waste nothing
(``host.call_stretch_weighted``).

``--on-core`` (the fifteenth round): a runtime call is on its core only threads.py's share of its
wall time (its CPU over CPU and run delay, the median over ``threads/``'s rates:
``host.call_on_core``), even with a core to spare, and the cores hand the rest to the other
phases while all are busy. The calls' costs are their CPU time (rule 4), so a lone call takes its
wall time and the cores are asked for its CPU time alone. Its run delay is counted there, so no
preemptions are drawn. Needs ``threads/`` and not ``--wall-time``.

``--lag MS`` (the sixteenth round): a thread's lag (``host.lag_ms``): a thread that woke runs
ahead of one that has run on, for up to MS of CPU, as Linux's EEVDF lets it; the runtime calls'
threads are their executors, what they have run carried from call to call while they do not
sleep. With the calls' CPU time (rule 4) and their preemptions, or ``--no-preempt --wall-time``;
not with ``--run-queues``, ``--call-stretch`` or ``--on-core``.

``--among-calls`` (the eighteenth round; with ``--lag``): the lag acts among the runtime calls
only, while they outnumber the cores (``host.lag_among_calls``): every phase keeps processor
sharing's rate, and the calls split theirs so that each call's first MS run ahead of the others'
rest. One executor per core (``fifo``, ``sjf``) is then unchanged.

``--preempt-from-calls`` (the nineteenth round): the calls' preemptions read off their own
timeline instead of ``sched/``: at the grid's lowest level, the engine policies' runtime calls off
their core beyond timelines.py's ``OFF_MIN_MS`` per ms of their CPU, and those calls' time off a
core as the waits (``compare.call_preemption``). Not with ``--no-preempt``, ``--on-core`` or
``--preempt-by-level``.

``--calls-by-level`` (the nineteenth round; with ``--preempt-from-calls``): each level is
simulated with the preemptions of its own level's calls instead of the lowest level's — a
diagnostic, not a prediction: it reads the host's state off the level it predicts, and tells
whether, given the calls' own time off a core at each level, the rest of the model meets the lab.

``--costs-by-level`` (the nineteenth round; with ``--call-cpu``): each level is simulated with
its own level's calls' CPU as the device costs (the engine policies' runs at that rate alone) —
a diagnostic like ``--calls-by-level``: this host's calls get cheaper as the load rises
(``char_cnn``'s batch of one 0.64 ms of CPU at 200 req/s, 0.42 at 900; ``line_rnn_zh``'s 4.83,
4.34), which one cost curve read over every level cannot follow.

``--server-cpu`` (the nineteenth round): the server's CPU beyond its runtime calls read off
the runs themselves — per run the process's cores less the calls' own (timelines.py's
``preempted`` ``cpu_ms / span_s``), least squares over the runs as ``a + p x rate``
(``compare.server_cpu``) — instead of the scenario's ``pre`` and ``post`` and threads.py's one
rate: every service's ``pre`` and ``post`` scaled alike so that the mix's comes to ``p``, and
``a`` added to ``host.busy_cores`` in place of the fit's own constant (:func:`host_fit`; until
round 37 beside it). The client part keeps its ``IO_EXTRA``.

``--call-cpu`` (the nineteenth round): the device costs are the calls' own CPU, each cell the
run's median ``cpu_ms`` of that model and batch size (timelines.py), instead of its median wall
time x threads.py's on-core share (rule 4); threads/ still gives the I/O threads' CPU. Not with
``--wall-time`` or ``--on-core``.

``--cost-mean`` (the twenty-first round): with ``--call-cpu``, each cost point is the mean CPU
of its calls over the runs (timelines.py's ``cpu_mean_ms`` weighted by the cells' batches), not
the median over the runs of the cells' medians. The simulator's cost is a mean, and a batch's
CPU is skewed to the right: the median reads the batches of 2 to 8 requests 2 to 8 % cheap.

``--pooled-ratio`` (the thirtieth round): with ``--call-cpu``, a cost point the grid reads
too few runs of (``line_rnn_en``'s 4 and 8, ``char_cnn``'s 16 on a grid of this host) is the
nearest point below it (read, or set so) times the ratio the grid's own batches give between
the two sizes (compare.pooled_ratio_of, at least 30 batches), not the base scenario's.

``--absorbed`` (the nineteenth round): the calls' preemption waits stand for all of their
waiting for a core, not on top of the shared cores' (``host.call_preempt_absorbed``): drawn as
before, held after the call for what they exceed its wait on the cores. Not with
``--no-preempt`` or ``--on-core``.

``--calls`` (the eighteenth round): after the table, the runtime calls' wait per ms of their
cost per variant, rate and model: the lab's (the ``calls`` block timelines.py writes into the
grid's timelines.json, ``off_per_cpu``, mean over repeats) against the simulator's
(``call_ms / call_cost_ms - 1``). With per-thread CPU costs both are time off a core per ms of
CPU; with wall-time costs the simulator's starts from 0 at light load where the lab's does not.

``--host-speed`` (the fifteenth round): the host's speed over time (``host.speed_cv``,
``host.speed_ms``) read off the grid's two lightest levels by host_speed.py.

``--host-speed-cpu LEVELS`` (the twentieth round): the host's speed read instead off the calls'
CPU with warmth taken out (host_speed.py ``--cpu --warm``) at those level indices (e.g. ``2,3``,
the levels whose tails the knee's count judges): a wait for a core, which grows with the load,
and a warm call's saving are then not read as the host's speed.

``--write FILE`` (the twentieth round): also writes the scenario read as a ``lanes sim`` TOML
file (scenario_file.py), headed by the command, the grid read and the count, so that it can be
set against other grids as it is (against_demo.py ``--grid``) or committed. Not with the
per-level diagnostics (``--preempt-by-level``, ``--calls-by-level``, ``--costs-by-level``),
which simulate a different scenario at each level.

Prints (and with ``--markdown`` writes) the scenario's figures and compare.py's table of
predicted against measured p50, p99 and goodput, with the count within 15 % below the knee;
``--against GRID`` sets the scenario against another grid's runs instead (a scenario read off
one hour, set against the next).

Run:  python bench/calibrate/same_hour.py RESULTS WAITS_JSON [--no-preempt] [--wall-time]
      [--busy-wakes] [--deconvolved] [--run-queues] [--call-stretch lossy|weighted]
      [--preempt-by-level] [--on-core] [--host-speed] [--lag MS]
      [--call-cpu] [--server-cpu] [--absorbed] [--preempt-from-calls] [--host-speed-cpu LEVELS]
      [--against GRID] [--markdown OUT.md] [--write SCENARIO.toml]
      (WAITS_JSON: spans.py RESULTS --json WAITS_JSON)
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import statistics
import subprocess
import sys
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import busy_wakes  # beside this file
import client_part as deconvolution
import host_speed
import scenario_file
from against_demo import GRID_AS_SIMULATED
from against_demo import predicted as simulate
from compare import (
    DEFAULT_SCENARIO,
    KNEE,
    TARGET,
    WINDOW_SLACK,
    Fit,
    calibrated,
    call_preemption,
    emit,
    fit,
    in_situ,
    linear,
    load_runs,
    load_threads,
    measured,
    preempt_rates,
    preemption,
    scenario_lines,
    server_cpu,
    summary,
    table,
    with_costs,
)
from variants import IO_EXTRA, STRETCH

from lanes.sim.scenario import Scenario

Quantiles = tuple[tuple[float, float], ...]

READ_OFF = ("independent", "fifo", "sjf")
"""The variants a scenario is read off (each a policy of its own name, one batch in flight)."""
AS_SIMULATED = GRID_AS_SIMULATED
"""A grid variant → (the simulator's policy, batches of each model in flight)."""


def lab_call_waits(
    folder: Path, runs: list[dict[str, Any]]
) -> dict[tuple[str, float], dict[str, float]]:
    """(variant, offered rps) → model → the lab's calls' time off a core per ms of CPU, the
    mean over repeats of each run's ``off_per_cpu`` (``folder``'s timelines.json); under
    ``cpu_idle`` the host's idle share of its cores (the run's ``server.host_cpu_idle``), and
    under ``gpu_busy`` its devices' busy share (``server.device``'s ``busy_s`` over the
    window, mean over devices); those two over the runs whose server window is the
    measurement's (``compare.WINDOW_SLACK``: before 2026-11-29 the runner's window ran up to a
    second long in about half of the runs, diluting both)."""
    timelines = json.loads((folder / "timelines.json").read_text())
    groups: dict[tuple[str, float], dict[str, list[float]]] = {}
    for r in runs:
        calls = timelines.get(r["id"], {}).get("calls", {})
        key = (r["variant"], r["offered"]["rate_rps"])
        for model, c in calls.items():
            groups.setdefault(key, {}).setdefault(model, []).append(c["off_per_cpu"] or 0.0)
        server = r.get("server", {})
        if server.get("window_s", 0.0) > WINDOW_SLACK * r.get("measure_s", math.inf):
            continue  # the host's and devices' shares of a window that ran past the load
        if calls and server.get("host_cpu_idle") is not None:
            groups[key].setdefault("cpu_idle", []).append(server["host_cpu_idle"])
        devices = server.get("device", {})
        if calls and devices and server.get("window_s"):
            busy = statistics.fmean(d["busy_s"] for d in devices.values()) / server["window_s"]
            groups[key].setdefault("gpu_busy", []).append(busy)
    return {k: {m: statistics.fmean(xs) for m, xs in v.items()} for k, v in groups.items()}


def calls_table(
    lab: dict[tuple[str, float], dict[str, float]],
    pred: dict[tuple[str, float], dict[str, float]],
) -> str:
    """The calls' wait per ms, lab against simulated, per variant, rate and model."""
    host = ("cpu_idle", "gpu_busy")
    models = sorted({m for v in lab.values() for m in v} - set(host))
    lines = [
        "the runtime calls' wait per ms of cost, lab (off per ms CPU) / simulated "
        "(call / cost - 1); the cores' idle share, lab (the host's) / simulated; the devices' "
        "busy share, lab / simulated:",
        "",
        "| variant | req/s | " + " | ".join(models) + " | cores idle | devices busy |",
        "|---|---:|" + "---:|" * (len(models) + 2),
    ]
    for key in sorted(k for k in pred if k in lab):
        cells = []
        for m in [*models, *host]:
            name = m if m in host else f"wait_per_ms:{m}"
            got, sim_ = lab[key].get(m), pred[key].get(name)
            cells.append("" if got is None or sim_ is None else f"{got:.2f} / {sim_:.2f}")
        lines.append(f"| {key[0]} | {key[1]:.0f} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def as_quantiles(points: list[list[float]]) -> Quantiles:
    return tuple((float(p), float(ms)) for p, ms in points)


def lowest(waits: dict[str, Any]) -> list[dict[str, Any]]:
    """The entries of ``waits`` (``variant@rate``) at the lowest rate."""
    rate = min(float(k.split("@")[1]) for k in waits)
    return [v for k, v in waits.items() if float(k.split("@")[1]) == rate]


def mean_wake(entries: list[dict[str, Any]], term: str) -> Quantiles:
    """Each quantile of ``term`` the mean over ``entries`` (variants) of theirs."""
    points = [e[term] for e in entries]
    return tuple(
        (p, round(statistics.fmean(pts[i][1] for pts in points), 4))
        for i, (p, _) in enumerate(points[0])
    )


def client_part(entries: list[dict[str, Any]]) -> Quantiles:
    """The client part less :data:`IO_EXTRA` (module doc)."""
    gaps = [g for e in entries for g in e["client_part"].values()]
    p50, p90, p99 = (max(0.0, statistics.median(g[i] for g in gaps) - IO_EXTRA) for i in range(3))
    return ((0.0, 0.0), (0.5, p50), (0.9, max(p50, p90)), (0.99, max(p90, p99)), (1.0, 1.5 * p99))


def host_fit(f: Fit, server_cpu: bool) -> Fit:
    """The fit the scenario is calibrated with. With ``--server-cpu`` the server's CPU whatever
    the load is ``compare.server_cpu``'s ``a`` alone (:func:`with_server_cpu` puts it on
    ``busy_cores``), so the fit's own constant (rule 2's ``a``, or threads.py's I/O threads')
    is not put there too: ``busy_cores`` is then the rest of the host's measured CPU plus that
    one ``a``. Until round 37 both went on: on grid 213 of 2026-12-03 (no ``threads/``) rule 2's
    ``a``, 0.254 cores with a per-request term of -0.21 ms, beside ``server_cpu``'s 0.098 and
    the measured 0.113 made ``busy_cores`` 0.465."""
    return replace(f, server_cores=0.0) if server_cpu else f


def with_server_cpu(scenario: Scenario, cores: float, per_request_ms: float) -> Scenario:
    """``scenario`` with its requests' CPU outside the runtime calls (each service's ``pre`` and
    ``post``) scaled alike so that the mix's comes to ``per_request_ms``, and ``cores`` more
    on ``host.busy_cores`` (the server's CPU whatever the load)."""
    total = sum(s.share for s in scenario.services)
    mix = sum(s.share / total * (s.pre.mean_ms + s.post.mean_ms) for s in scenario.services)
    k = per_request_ms / mix if mix > 0 else 1.0
    services = tuple(
        replace(
            s,
            pre=replace(s.pre, mean_ms=round(s.pre.mean_ms * k, 4)),
            post=replace(s.post, mean_ms=round(s.post.mean_ms * k, 4)),
        )
        for s in scenario.services
    )
    host = replace(scenario.host, busy_cores=round(scenario.host.busy_cores + cores, 4))
    return replace(scenario, host=host, services=services)


def commit() -> str:
    """The checkout's commit (``git rev-parse --short HEAD``), or ``an unknown commit``."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return "an unknown commit"
    return f"commit {out.stdout.strip()}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="a calibration grid run with --trace-requests")
    ap.add_argument("waits", type=Path, help="spans.py RESULTS --json's output")
    ap.add_argument("--scenario", type=Path, default=DEFAULT_SCENARIO)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=40_000)
    ap.add_argument("--markdown", type=Path)
    ap.add_argument(
        "--no-preempt", action="store_true", help="no preemptions of the runtime calls at all"
    )
    ap.add_argument(
        "--wall-time", action="store_true", help="the calls' wall time even with threads/ here"
    )
    ap.add_argument(
        "--against", type=Path, help="set the scenario against this grid's runs instead"
    )
    ap.add_argument(
        "--busy-wakes",
        action="store_true",
        help="wake-ups beside no call and onto busy cores (busy_wakes.py)",
    )
    ap.add_argument(
        "--deconvolved", action="store_true", help="the client part deconvolved (client_part.py)"
    )
    ap.add_argument(
        "--run-queues",
        action="store_true",
        help="a run queue per core (host.run_queues) instead of sharing every core",
    )
    ap.add_argument(
        "--call-stretch",
        choices=("lossy", "weighted"),
        help="the calls' measured stretch (host.call_stretch), as a loss or a share",
    )
    ap.add_argument(
        "--preempt-by-level",
        action="store_true",
        help="the calls' preemption rate by offered rate, from sched/ (not one median)",
    )
    ap.add_argument(
        "--on-core",
        action="store_true",
        help="the calls on their core only threads.py's share of their wall time "
        "(host.call_on_core), their run delay counted there and not as preemptions",
    )
    ap.add_argument(
        "--host-speed",
        action="store_true",
        help="the host's speed over time (host.speed_cv, speed_ms) read off the grid's lightest "
        "levels (host_speed.py)",
    )
    ap.add_argument(
        "--lag",
        type=float,
        metavar="MS",
        help="a thread's lag (host.lag_ms): one that woke runs ahead of one that ran on",
    )
    ap.add_argument(
        "--calls",
        action="store_true",
        help="after the table, the calls' wait per ms of cost per model, lab (timelines.json's "
        "calls) against simulated",
    )
    ap.add_argument(
        "--among-calls",
        action="store_true",
        help="with --lag: the lag splits the calls' share among the calls only, while they "
        "outnumber the cores (host.lag_among_calls)",
    )
    ap.add_argument(
        "--preempt-from-calls",
        action="store_true",
        help="the calls' preemptions read off their own timeline at the lowest level "
        "(timelines.py's preempted) instead of sched/",
    )
    ap.add_argument(
        "--calls-by-level",
        action="store_true",
        help="with --preempt-from-calls: each level simulated with its own level's calls' "
        "preemptions (a diagnostic: the host's state read off the level it predicts)",
    )
    ap.add_argument(
        "--costs-by-level",
        action="store_true",
        help="with --call-cpu: each level simulated with its own level's calls' CPU as the "
        "device costs (a diagnostic, as --calls-by-level)",
    )
    ap.add_argument(
        "--server-cpu",
        action="store_true",
        help="the server's CPU beyond the calls fitted over the runs as a + p x rate (process "
        "CPU less the calls' own): pre and post scaled to p, a on the busy cores",
    )
    ap.add_argument(
        "--call-cpu",
        action="store_true",
        help="the device costs are the calls' own CPU (timelines.py's cpu_ms per model and "
        "size) instead of their wall time x threads.py's on-core share",
    )
    ap.add_argument(
        "--cost-mean",
        action="store_true",
        help="with --call-cpu: each cost point the mean CPU of its calls over the runs, not the "
        "median of the runs' medians (the simulator's cost is a mean)",
    )
    ap.add_argument(
        "--pooled-ratio",
        action="store_true",
        help="with --call-cpu: a cost point too few runs read is the point below x the grid's "
        "own ratio between the sizes (at least 30 batches), not the base scenario's",
    )
    ap.add_argument(
        "--absorbed",
        action="store_true",
        help="the calls' preemption waits net of the shared cores' wait: held after the call "
        "for what they exceed it (host.call_preempt_absorbed)",
    )
    ap.add_argument(
        "--host-speed-cpu",
        metavar="LEVELS",
        help="the host's speed read off the calls' CPU with warmth taken out at these level "
        "indices, e.g. 2,3 (host_speed.py --cpu --warm --levels LEVELS)",
    )
    ap.add_argument(
        "--write",
        type=Path,
        metavar="FILE",
        help="also write the scenario read as a lanes sim TOML file (not with the per-level "
        "diagnostics)",
    )
    args = ap.parse_args(argv)
    by_level = args.preempt_by_level or args.calls_by_level or args.costs_by_level
    if args.write and by_level:
        ap.error(
            "--write writes one scenario: not with --preempt-by-level, --calls-by-level or "
            "--costs-by-level (a scenario per level)"
        )
    speed_levels = None
    if args.host_speed_cpu is not None:
        if args.host_speed:
            ap.error("--host-speed and --host-speed-cpu: the host's speed is read one way")
        try:
            speed_levels = [int(x) for x in args.host_speed_cpu.split(",")]
        except ValueError:
            ap.error(f"--host-speed-cpu {args.host_speed_cpu!r}: level indices such as 2,3")
    if args.write and not args.write.parent.is_dir():
        ap.error(f"--write {args.write}: no such folder {args.write.parent}")
    if args.preempt_from_calls and (args.no_preempt or args.on_core or args.preempt_by_level):
        ap.error(
            "--preempt-from-calls reads the preemptions: not with --no-preempt, --on-core or "
            "--preempt-by-level"
        )
    if args.calls_by_level and not args.preempt_from_calls:
        ap.error("--calls-by-level needs --preempt-from-calls")
    if args.costs_by_level and not args.call_cpu:
        ap.error("--costs-by-level needs --call-cpu")
    if args.cost_mean and not args.call_cpu:
        ap.error("--cost-mean reads the calls' own CPU: it needs --call-cpu")
    if args.pooled_ratio and not args.call_cpu:
        ap.error("--pooled-ratio reads the calls' own CPU: it needs --call-cpu")
    if args.call_cpu and (args.wall_time or args.on_core):
        ap.error("--call-cpu is a per-thread CPU cost: not with --wall-time or --on-core")
    if args.absorbed and (args.no_preempt or args.on_core):
        ap.error("--absorbed nets out the preemptions' waits: not with --no-preempt or --on-core")
    if args.lag is not None and not args.lag > 0:
        ap.error(f"--lag must be a number of ms above 0, not {args.lag}")
    if args.among_calls and not args.lag:
        ap.error("--among-calls needs --lag MS (the lag it splits the calls' share by)")
    timelines_at = args.against or args.results
    if args.calls and not (timelines_at / "timelines.json").is_file():
        ap.error(f"--calls needs {timelines_at}/timelines.json (run timelines.py on the grid)")
    if args.lag and (args.run_queues or args.call_stretch or args.on_core):
        ap.error(
            "--lag shares the cores its own way: not with --run-queues, --call-stretch or --on-core"
        )
    if args.preempt_by_level and (args.no_preempt or not (args.results / "sched").is_dir()):
        ap.error("--preempt-by-level needs sched/ in the grid read, and not --no-preempt")
    if args.on_core and (args.wall_time or not (args.results / "threads").is_dir()):
        ap.error("--on-core needs threads/ in the grid read, and not --wall-time")
    if args.on_core and (args.run_queues or args.preempt_by_level):
        ap.error(
            "--on-core counts the calls' run delay: not with --run-queues or --preempt-by-level"
        )
    if args.on_core and args.call_stretch == "lossy":
        ap.error(
            "--on-core gives the calls a share of the cores: with --call-stretch weighted only"
        )
    if args.run_queues and args.call_stretch:
        ap.error("--run-queues and --call-stretch: the simulator takes one or the other")
    runs = load_runs(args.results)
    read = sorted({r["variant"] for r in runs} - set(READ_OFF))
    if read:
        ap.error(
            f"{args.results} holds {', '.join(read)}: the scenario is read off fifo, sjf and "
            "independent alone (set it against the others with --against)"
        )
    base = Scenario.load(args.scenario)
    timelines = json.loads((args.results / "timelines.json").read_text())
    threads = None if args.wall_time else load_threads(args.results / "threads")
    sched = args.results / "sched"
    if args.no_preempt or args.on_core:
        why = "--on-core counts the run delay" if args.on_core else "--no-preempt"
        preempt, whence = (0.0, ()), f"none ({why})"
    elif args.preempt_from_calls:
        preempt = call_preemption(timelines, runs)
        whence = "the calls' own timeline at the lowest level (timelines.py's preempted)"
        if args.calls_by_level:
            whence = "the calls' own timeline at each level (timelines.py's preempted)"
    elif sched.is_dir():
        preempt, whence = preemption(sched), "sched/ of this grid"
    else:
        preempt = (base.host.call_preempt_per_ms, base.host.call_preempt_ms)
        whence = f"{args.scenario.name}'s (no sched/ here)"
    f = fit(
        runs,
        base,
        timelines,
        None,
        threads,
        preempt=preempt,
        call_cpu=args.call_cpu,
        cost_mean=args.cost_mean,
        pooled_ratio=args.pooled_ratio,
    )
    entries = lowest(json.loads(args.waits.read_text()))
    scenario = calibrated(base, host_fit(f, args.server_cpu))
    host = replace(
        scenario.host,
        handoff_ms=0.0,
        pre_wake_ms=mean_wake(entries, "wake_pre"),
        post_wake_ms=mean_wake(entries, "wake_post"),
        client_ms=client_part(entries),
        # the eleventh round's model unless --busy-wakes: one table per wake-up, whatever runs
        pre_wake_busy_ms=(),
        post_wake_busy_ms=(),
    )
    models = []
    if args.busy_wakes:
        wakes = busy_wakes.tables(busy_wakes.collect(args.results), base.host.cpu_cores)
        host = replace(host, **{k: as_quantiles(wakes[k]) for k in busy_wakes.KEYS})
        models.append("wake-ups by the calls running (busy_wakes.py)")
    if args.deconvolved:
        found, _ = deconvolution.fit(deconvolution.Lowest(args.results, IO_EXTRA))
        client = zip(deconvolution.POINTS, found, strict=True)
        host = replace(host, client_ms=tuple((p, round(float(x), 4)) for p, x in client))
        models.append("the client part deconvolved (client_part.py)")
    if args.run_queues:
        host = replace(host, run_queues=True, call_stretch=())
        models.append("a run queue per core (host.run_queues)")
    if args.call_stretch:
        weighted = args.call_stretch == "weighted"
        host = replace(host, call_stretch=STRETCH, call_stretch_weighted=weighted)
        models.append(f"the calls' stretch {list(STRETCH)}, {args.call_stretch}")
    if args.on_core:
        assert threads is not None
        share = round(statistics.median(threads.on_core(t.rate_rps) for t in threads.levels), 4)
        host = replace(host, call_on_core=share)
        models.append(f"the calls on their core {share} of their wall time (threads/)")
    if args.lag:
        host = replace(host, lag_ms=args.lag, lag_among_calls=args.among_calls)
        if args.among_calls:
            models.append(f"a lag of {args.lag} ms among the calls (host.lag_among_calls)")
        else:
            models.append(f"a thread's lag of {args.lag} ms (host.lag_ms)")
    if args.absorbed:
        host = replace(host, call_preempt_absorbed=True)
        models.append("the preemptions' waits net of the cores' (host.call_preempt_absorbed)")
    if args.host_speed or speed_levels is not None:
        by_cpu = speed_levels is not None  # --host-speed-cpu: the calls' CPU, warmth out
        speed = host_speed.read(args.results, speed_levels, cpu=by_cpu, warm=by_cpu)
        host = replace(host, speed_cv=speed.speed_cv, speed_ms=speed.speed_ms)
        how = f" --cpu --warm at levels {args.host_speed_cpu}" if by_cpu else ""
        models.append(
            f"the host's speed over time (cv {speed.speed_cv}, epochs of {speed.speed_ms} ms: "
            f"host_speed.py{how})"
        )
    scenario = replace(scenario, host=host)
    if args.server_cpu:
        a, per_request = server_cpu(runs, timelines)
        scenario = with_server_cpu(scenario, a, per_request)
        models.append(
            f"the server's CPU beyond the calls {a} cores + {per_request} ms a request, fitted "
            "over the runs (compare.server_cpu)"
        )
    judged = runs if args.against is None else load_runs(args.against)
    meas = measured(judged)
    variants = sorted({k[0] for k in meas})
    unknown = sorted(set(variants) - set(AS_SIMULATED))
    if unknown:
        ap.error(f"variants the simulator does not model: {', '.join(unknown)}")
    rates = sorted({k[1] for k in meas})
    if args.preempt_by_level:
        by_rate = preempt_rates(args.results / "sched")
        models.append(f"preemptions per ms by offered rate {list(by_rate)}, linear between")
    if args.calls_by_level:
        models.append("each level's own calls' preemptions (a diagnostic)")
    if args.costs_by_level:
        models.append("each level's own calls' CPU as the device costs (a diagnostic)")
    if by_level:
        pred = {}
        for rate in rates:
            level = scenario
            if args.preempt_by_level:
                at = replace(level.host, call_preempt_per_ms=linear(by_rate, rate))
                level = replace(level, host=at)
            if args.calls_by_level:
                per_ms, waits = call_preemption(timelines, runs, rate)
                at = replace(level.host, call_preempt_per_ms=per_ms, call_preempt_ms=waits)
                level = replace(level, host=at)
            if args.costs_by_level:
                ids = {r["id"] for r in runs if r["offered"]["rate_rps"] == rate}
                own = {k: t for k, t in timelines.items() if k in ids}
                level = with_costs(
                    level,
                    in_situ(
                        own,
                        base,
                        call_cpu=True,
                        cost_mean=args.cost_mean,
                        pooled_ratio=args.pooled_ratio,
                    ),
                )
            pred.update(simulate(level, variants, [rate], args.seeds, args.requests, AS_SIMULATED))
    else:
        pred = simulate(scenario, variants, rates, args.seeds, args.requests, AS_SIMULATED)
    below = [k for k, m in meas.items() if m["goodput"] >= KNEE * k[1]]
    within = sum(
        abs(pred[k][x] - meas[k][x]) <= TARGET * meas[k][x]
        for k in below
        for x in ("p50", "p99", "goodput")
    )
    against = "" if args.against is None else f", set against {args.against}"
    cost_reading = "wall time" if threads is None else "per-thread CPU"
    if args.call_cpu:
        cost_reading = "the calls' own CPU (cpu_ms)"
    if args.cost_mean:
        cost_reading = "the calls' own CPU, each point their mean (cpu_mean_ms)"
    if args.pooled_ratio:
        cost_reading += ", the unread points at the grid's own ratio"
    head = (
        f"{args.results}: {len(runs)} runs{against}; the scenario read off them "
        f"({args.scenario.name}'s other keys): device costs in situ, "
        f"{cost_reading}; "
        f"preemptions {whence}; wake-ups and client part (less {IO_EXTRA} ms of I/O CPU on "
        f"pre) from the spans at the lowest level; {args.seeds} seeds x {args.requests} requests"
        + "".join(f"; {m}" for m in models)
        + ". "
        f"**{within} of {3 * len(below)} within {TARGET:.0%}** below the knee.\n\n"
        + scenario_lines(scenario)
        + "\nclient_ms = "
        + json.dumps([list(q) for q in host.client_ms])
        + "\npre_wake_ms = "
        + json.dumps([list(q) for q in host.pre_wake_ms])
        + "\npost_wake_ms = "
        + json.dumps([list(q) for q in host.post_wake_ms])
        + "".join(
            f"\n{k} = {json.dumps([list(q) for q in getattr(host, k)])}"
            for k in ("pre_wake_busy_ms", "post_wake_busy_ms")
            if getattr(host, k)
        )
    )
    if args.write:
        command = shlex.join(["same_hour.py", *(sys.argv[1:] if argv is None else argv)])
        when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        scenario_file.write(
            args.write,
            replace(scenario, description=f"{scenario.description} (read off {args.results})"),
            f"Written by bench/calibrate/{command} on {when}, lanes at {commit()}.\n"
            f"Read off {args.results} ({len(runs)} runs){against}: "
            f"{within} of {3 * len(below)} within {TARGET:.0%} below the knee.\n"
            + "\n".join(["Models:", *(f"- {m}" for m in models)] if models else [])
            + "\nHow each figure is read: bench/calibrate/same_hour.py's docstring and "
            "docs/results/calibration.md.",
        )
    text = f"{head}\n\n{table(meas, pred)}\n{summary(meas, pred)}"
    if args.calls:
        text += "\n" + calls_table(lab_call_waits(timelines_at, judged), pred)
    return emit(text, args.markdown)


if __name__ == "__main__":
    raise SystemExit(main())
