"""The host's speed over time, read off a calibration grid's device timelines (the fifteenth
round, docs/results/calibration.md): ``host.speed_cv`` and ``host.speed_ms`` for the simulator.

On a shared host a runtime call's slowdown (its ``measured_ms`` over its cell's median in that
run; a cell is a model and batch size with at least :data:`MIN_CELL` batches) is correlated with
the calls around it in time. The simulator's speed process (crates/lanes-sim/src/speed.rs) gives
every phase a factor of mean 1 that changes at epochs of exponential length ``speed_ms``: its log
is a process with variance ``σ²`` and autocorrelation ``exp(-t / speed_ms)``.

**Rule.** At the grid's lightest levels (where calls hardly overlap, so what moves them together
is the host, not the load), for each run and each window length ``w`` of :data:`WINDOWS_MS`, the
runs' calls are cut into windows of ``w`` ms and the variance of the windows' mean log-slowdown is
taken, less what independent draws would give (the calls' variance times the mean of ``1/n`` over
the windows): the *excess* ``V(w)``, median over the runs. For a process as above
``V(w) = σ² f(w / τ)`` with ``f(x) = 2 (x - 1 + e^-x) / x²``. For each ``τ`` on a log grid from
:data:`TAU_MIN_MS` to :data:`TAU_MAX_MS` the best ``σ²`` in log space is
``exp(mean(log V(w) - log f(w / τ)))``; the ``τ`` with the least squared log error is taken.
``speed_cv = sqrt(exp(σ²) - 1)`` (the lognormal factor's coefficient of variation),
``speed_ms = τ``. Windows whose excess is not above 0 cannot be fitted in log space: with fewer
than 3 left the grid shows no slow spells and both figures are 0.

``--cpu`` (the twentieth round): a call's slowdown is its ``cpu_ms`` over its cell's median
instead of its ``measured_ms``: the CPU the call took, not its wall time, so that a wait for a core
(which grows with the load) does not count as the host's speed, and levels near the knee can be
read. ``--warm`` (the twentieth round): a cell is also keyed by what its device ran last — the
same model or another — and the gap from that call's end to this call's start (bucketed at
:data:`WARM_GAPS_MS`), so that a warm call's saving (up to 45 % for ``char_cnn``, round20/warm.py)
does not count as the host's speed either.

``--between-runs CV,MS`` (the twenty-ninth round): ``host.speed_run_cv``, the run's own speed
that the simulator draws once per run on top of the epochs. **Rule.** At the levels read (the two
lightest by default), from the grid's timelines.json (no request traces needed), each run's
log-speed is the work-weighted mean (weights: batches x ``cpu_ms``) over the cells of
:data:`MIN_CELL` batches or more, present in every run of its variant and level, of the log of the
cell's median ``cpu_ms`` over that cell's median across those runs. The between-run variance
``V`` is the pooled sample variance of the log-speeds about their variant and level's mean. Part
of it the epochs already make over a run's window ``W`` (the runs' median ``measure_s``):
``σ² f(W / τ)`` with ``σ² = ln(1 + CV²)``, ``τ = MS`` (the scenario's ``speed_cv`` and
``speed_ms``) and ``f`` as above. ``speed_run_cv = sqrt(exp(max(0, V - σ² f)) - 1)``.

Run:  python bench/calibrate/host_speed.py RESULTS [--levels 0,1] [--cpu] [--warm] [--json FILE]
      python bench/calibrate/host_speed.py RESULTS [RESULTS ...] --between-runs 0.1,250
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from compare import load_runs  # beside this file

WINDOWS_MS = (10, 20, 50, 100, 200, 500, 1000)
"""The window lengths the excess variance is read at."""
MIN_CELL = 20
"""Batches a cell (model, batch size) needs in a run for its median to count."""
WARM_GAPS_MS = (0.05, 0.2, 1.0, 5.0, 20.0)
"""With ``--warm``: the gap buckets' edges, ms (a bucket is (previous edge, edge], one past the
last), as round20/warm.py's."""
MIN_WINDOW = 3
"""Calls a window needs to count."""
TAU_MIN_MS, TAU_MAX_MS, TAU_STEPS = 1.0, 10_000.0, 161
"""The log grid of epoch lengths tried."""


@dataclass(frozen=True)
class Fit:
    """A grid's speed process: the simulator's two keys and what they were read from."""

    speed_cv: float
    speed_ms: float
    sigma: float
    """Standard deviation of the factor's log."""
    runs: int
    excess: dict[int, float]
    """Window length (ms) to the excess variance of its mean log-slowdown (median over runs)."""
    ratio: dict[int, float] = field(default_factory=dict)
    """Window length (ms) to the variance of its mean log-slowdown over what independent draws
    would give (median over runs): 1 on a steady host."""


def gap_bucket(gap_ms: float) -> int:
    """The index of ``gap_ms``'s bucket in :data:`WARM_GAPS_MS`."""
    return next((i for i, edge in enumerate(WARM_GAPS_MS) if gap_ms <= edge), len(WARM_GAPS_MS))


def slowdowns(
    trace: dict[str, Any] | list[dict[str, Any]], *, cpu: bool = False, warm: bool = False
) -> list[tuple[float, float]]:
    """A run's calls in time order: (start in ms, log of measured_ms — ``cpu_ms`` with ``cpu`` —
    over its cell's median), cells with at least :data:`MIN_CELL` batches. A cell is a model and
    batch size, and with ``warm`` also whether its device's previous call was of the same model
    and the bucket of the gap since that call ended (a device's first call has no cell)."""
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    field_ = "cpu_ms" if cpu else "measured_ms"
    calls = sorted(
        (e for e in events if e.get("ph") == "X" and field_ in e.get("args", {})),
        key=lambda e: e["ts"] + e["dur"],
    )
    last: dict[Any, tuple[float, str]] = {}
    keyed: list[tuple[dict[str, Any], tuple[Any, ...]]] = []
    for e in calls:
        a = e["args"]
        end = (e["ts"] + e["dur"]) / 1e3
        key: tuple[Any, ...] = (a["model"], a["batch_size"])
        if warm:
            before = last.get(e.get("tid"))
            last[e.get("tid")] = (end, a["model"])
            if before is None:
                continue
            start = end - a.get("measured_ms", 0.0)
            key += (before[1] == a["model"], gap_bucket(start - before[0]))
        keyed.append((e, key))
    cells: dict[tuple[Any, ...], list[float]] = defaultdict(list)
    for e, key in keyed:
        cells[key].append(e["args"][field_])
    median = {k: statistics.median(v) for k, v in cells.items() if len(v) >= MIN_CELL}
    out = []
    for e, key in sorted(keyed, key=lambda x: x[0]["ts"]):
        value = e["args"][field_]
        if key in median and value > 0 and median[key] > 0:
            out.append((e["ts"] / 1e3, math.log(value / median[key])))
    return out


def windows(calls: list[tuple[float, float]], window_ms: float) -> tuple[float, float] | None:
    """``(observed, independent)``: the variance of the windows' mean log-slowdown, and what
    independent draws would give it (the calls' variance times the mean of ``1/n`` over the
    windows); ``None`` with fewer than two windows of :data:`MIN_WINDOW` calls."""
    if not calls:
        return None
    start = calls[0][0]
    bins: dict[int, list[float]] = defaultdict(list)
    for t, y in calls:
        bins[int((t - start) // window_ms)].append(y)
    groups = [v for v in bins.values() if len(v) >= MIN_WINDOW]
    if len(groups) < 2:
        return None
    total = statistics.pvariance([y for _, y in calls])
    means = [statistics.fmean(v) for v in groups]
    return statistics.pvariance(means), total * statistics.fmean(1 / len(v) for v in groups)


def excess(calls: list[tuple[float, float]], window_ms: float) -> float | None:
    """The variance of the windows' mean log-slowdown beyond independent draws' (rule above);
    ``None`` as :func:`windows`."""
    got = windows(calls, window_ms)
    return None if got is None else got[0] - got[1]


def shape(x: float) -> float:
    """``f(x)``: the variance of a window's mean of a process with autocorrelation ``e^-t``,
    relative to the process's, for a window of ``x`` correlation times."""
    if x < 1e-6:
        return 1.0
    return 2 * (x - 1 + math.exp(-x)) / (x * x)


def fit(by_window: dict[int, float], runs: int) -> Fit:
    """The speed process whose window variances best match ``by_window`` (rule above)."""
    pts = [(w, v) for w, v in sorted(by_window.items()) if v > 0]
    if len(pts) < 3:
        return Fit(0.0, 0.0, 0.0, runs, dict(by_window))
    best: tuple[float, float, float] | None = None
    for i in range(TAU_STEPS):
        tau = TAU_MIN_MS * (TAU_MAX_MS / TAU_MIN_MS) ** (i / (TAU_STEPS - 1))
        logs = [math.log(v) - math.log(shape(w / tau)) for w, v in pts]
        log_s2 = statistics.fmean(logs)
        err = sum((x - log_s2) ** 2 for x in logs)
        if best is None or err < best[0]:
            best = (err, tau, log_s2)
    assert best is not None
    _, tau, log_s2 = best
    s2 = math.exp(log_s2)
    cv = math.sqrt(math.expm1(s2))
    return Fit(round(cv, 4), round(tau, 1), round(math.sqrt(s2), 4), runs, dict(by_window))


def traces(results: Path, levels: list[int] | None) -> list[Path]:
    """The grid's run timelines at ``levels`` (default: its two lightest), every variant."""
    files = sorted(results.glob("runs/*/L*-r*.trace.json"))
    level = {f: int(f.name.split("-")[0][1:]) for f in files}
    if levels is None:
        levels = sorted(set(level.values()))[:2]
    return [f for f in files if level[f] in levels]


def read(
    results: Path, levels: list[int] | None = None, *, cpu: bool = False, warm: bool = False
) -> Fit:
    """The fit for a grid folder (``lanes bench run --out``, its timelines kept); ``cpu`` and
    ``warm`` as :func:`slowdowns`."""
    files = traces(results, levels)
    if not files:
        raise FileNotFoundError(f"{results}: no runs/*/L*-r*.trace.json at those levels")
    return read_runs((json.loads(f.read_text()) for f in files), cpu=cpu, warm=warm)


def sim_events(spans: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The simulator's device timeline (``lanes.sim.timeline``'s spans) as the trace events
    :func:`read_runs` reads (µs; measured batches only), each call's wall time its
    ``end_ms - called_ms``."""
    return [
        {
            "ph": "X",
            "ts": s["start_ms"] * 1e3,
            "dur": (s["end_ms"] - s["start_ms"]) * 1e3,
            "args": {
                "model": s["service"],
                "batch_size": s["size"],
                "measured_ms": s["end_ms"] - s["called_ms"],
            },
        }
        for s in spans
        if s["measured"]
    ]


def read_runs(
    runs: Iterable[dict[str, Any] | list[dict[str, Any]]], *, cpu: bool = False, warm: bool = False
) -> Fit:
    """The fit over runs given as device timelines (a trace or its events; the simulator's, as
    :func:`sim_events` makes them, as well); ``cpu`` and ``warm`` as :func:`slowdowns`."""
    per_window: dict[int, list[float]] = defaultdict(list)
    ratios: dict[int, list[float]] = defaultdict(list)
    count = 0
    for trace in runs:
        count += 1
        calls = slowdowns(trace, cpu=cpu, warm=warm)
        for w in WINDOWS_MS:
            got = windows(calls, w)
            if got is not None:
                per_window[w].append(got[0] - got[1])
                if got[1] > 0:
                    ratios[w].append(got[0] / got[1])
    found = fit({w: statistics.median(v) for w, v in per_window.items()}, count)
    return replace(found, ratio={w: round(statistics.median(v), 2) for w, v in ratios.items()})


@dataclass(frozen=True)
class RunSpread:
    """The run's own speed read off grids (``--between-runs``; rule in the module docstring)."""

    speed_run_cv: float
    between_sd: float
    """Standard deviation of the runs' log-speed about their variant and level's mean."""
    epochs_sd: float
    """What the epochs make of it over a window, as a standard deviation of the log."""
    window_s: float
    runs: int
    groups: int


def run_speeds(results: Path, levels: list[int] | None) -> dict[tuple[str, int], list[float]]:
    """Each run's log-speed at ``levels`` (default: the grid's two lightest), grouped by variant
    and level index (rule in the module docstring), from ``results``/timelines.json."""
    path = results / "timelines.json"
    if not path.is_file():
        raise FileNotFoundError(f"{results}: no timelines.json (run timelines.py on the grid)")
    timelines = json.loads(path.read_text())
    level_of = {k: int(k.split("/")[1].split("-")[0][1:]) for k in timelines}
    if levels is None:
        levels = sorted(set(level_of.values()))[:2]
    groups: dict[tuple[str, int], dict[str, Any]] = defaultdict(dict)
    for key, run in timelines.items():
        if level_of[key] in levels:
            groups[(key.split("/")[0], level_of[key])][key] = run.get("models", {})
    out: dict[tuple[str, int], list[float]] = {}
    for group, runs in groups.items():
        cells: dict[tuple[str, str], dict[str, tuple[float, int]]] = defaultdict(dict)
        for key, models in runs.items():
            for model, sizes in models.items():
                for size, cell in sizes.items():
                    if cell.get("batches", 0) >= MIN_CELL and cell.get("cpu_ms", 0) > 0:
                        cells[(model, size)][key] = (cell["cpu_ms"], cell["batches"])
        shared = {c: v for c, v in cells.items() if len(v) == len(runs)}
        speeds = []
        for key in runs:
            num = den = 0.0
            for per_run in shared.values():
                median = statistics.median(ms for ms, _ in per_run.values())
                ms, batches = per_run[key]
                num += ms * batches * math.log(ms / median)
                den += ms * batches
            if den > 0:
                speeds.append(num / den)
        if len(speeds) >= 2:
            out[group] = speeds
    return out


def between_runs(
    grids: list[Path], speed_cv: float, speed_ms: float, levels: list[int] | None = None
) -> RunSpread:
    """``host.speed_run_cv`` off ``grids`` pooled, given the scenario's epochs (rule in the module
    docstring)."""
    squares, dof, groups, windows_s = 0.0, 0, 0, []
    for grid in grids:
        for speeds in run_speeds(grid, levels).values():
            mean = statistics.fmean(speeds)
            squares += sum((x - mean) ** 2 for x in speeds)
            dof += len(speeds) - 1
            groups += 1
        windows_s += [r.get("measure_s", 0.0) for r in load_runs(grid)]
    if dof == 0:
        raise FileNotFoundError(f"{', '.join(map(str, grids))}: no level with two runs to compare")
    window_s = statistics.median([w for w in windows_s if w > 0] or [0.0])
    v = squares / dof
    s2 = math.log1p(speed_cv * speed_cv)
    epochs = s2 * shape(window_s * 1e3 / speed_ms) if speed_cv > 0 and speed_ms > 0 else 0.0
    cv = math.sqrt(math.expm1(max(0.0, v - epochs)))
    return RunSpread(
        round(cv, 4), round(math.sqrt(v), 4), round(math.sqrt(epochs), 4), window_s, dof + groups,
        groups,
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "results", type=Path, nargs="+", help="a lanes bench run --out folder with timelines"
    )
    ap.add_argument("--levels", help="level indices to read, e.g. 0,1 (default: the two lightest)")
    ap.add_argument("--json", type=Path, help="write the fit here as well")
    ap.add_argument(
        "--cpu", action="store_true", help="the calls' cpu_ms, not their measured_ms (wall time)"
    )
    ap.add_argument(
        "--warm",
        action="store_true",
        help="cells keyed also by the device's previous call (same model or not) and the gap",
    )
    ap.add_argument(
        "--between-runs",
        metavar="CV,MS",
        help="read host.speed_run_cv off the grids' timelines.json, given the scenario's "
        "speed_cv and speed_ms (e.g. 0.1,250); several grids pool",
    )
    args = ap.parse_args(argv)
    try:
        levels = None if args.levels is None else [int(x) for x in args.levels.split(",")]
    except ValueError:
        ap.error(f"--levels {args.levels!r}: must be level indices such as 0,1")
    if args.between_runs is not None:
        try:
            cv, ms = (float(x) for x in args.between_runs.split(","))
        except ValueError:
            ap.error(
                f"--between-runs {args.between_runs!r}: must be speed_cv,speed_ms such as 0.1,250"
            )
        if not (cv >= 0 and ms >= 0 and (cv > 0) == (ms > 0)):
            ap.error(f"--between-runs {args.between_runs!r}: both >= 0, both above 0 or both 0")
        try:
            spread = between_runs(args.results, cv, ms, levels)
        except FileNotFoundError as e:
            print(f"host_speed: {e}", file=sys.stderr)
            return 2
        if args.json:
            args.json.write_text(json.dumps(asdict(spread), indent=1) + "\n")
        print(
            f"{len(args.results)} grid(s), {spread.runs} runs in {spread.groups} cells: the "
            f"runs' speed spreads {spread.between_sd} (sd of the log), the epochs make "
            f"{spread.epochs_sd} of it over {spread.window_s:g} s; "
            f"speed_run_cv = {spread.speed_run_cv}"
        )
        return 0
    if len(args.results) != 1:
        ap.error("one grid folder (several only with --between-runs)")
    try:
        got = read(args.results[0], levels, cpu=args.cpu, warm=args.warm)
    except FileNotFoundError as e:
        print(f"host_speed: {e}", file=sys.stderr)
        return 2
    text = json.dumps(asdict(got), indent=1)
    if args.json:
        args.json.write_text(text + "\n")
    print(
        f"{args.results[0]}: {got.runs} runs; speed_cv = {got.speed_cv}, speed_ms = {got.speed_ms} "
        f"(sigma of the log {got.sigma}); excess variance by window (ms): "
        + ", ".join(f"{w}: {v:.5f}" for w, v in sorted(got.excess.items()))
        + "; over independent draws' by window: "
        + ", ".join(f"{w}: {v}x" for w, v in sorted(got.ratio.items()))
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
