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

Run:  python bench/calibrate/host_speed.py RESULTS [--levels 0,1] [--cpu] [--warm] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

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
    per_window: dict[int, list[float]] = defaultdict(list)
    ratios: dict[int, list[float]] = defaultdict(list)
    for f in files:
        calls = slowdowns(json.loads(f.read_text()), cpu=cpu, warm=warm)
        for w in WINDOWS_MS:
            got = windows(calls, w)
            if got is not None:
                per_window[w].append(got[0] - got[1])
                if got[1] > 0:
                    ratios[w].append(got[0] / got[1])
    found = fit({w: statistics.median(v) for w, v in per_window.items()}, len(files))
    return replace(found, ratio={w: round(statistics.median(v), 2) for w, v in ratios.items()})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="a lanes bench run --out folder with timelines")
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
    args = ap.parse_args(argv)
    try:
        levels = None if args.levels is None else [int(x) for x in args.levels.split(",")]
    except ValueError:
        ap.error(f"--levels {args.levels!r}: must be level indices such as 0,1")
    try:
        got = read(args.results, levels, cpu=args.cpu, warm=args.warm)
    except FileNotFoundError as e:
        print(f"host_speed: {e}", file=sys.stderr)
        return 2
    text = json.dumps(asdict(got), indent=1)
    if args.json:
        args.json.write_text(text + "\n")
    print(
        f"{args.results}: {got.runs} runs; speed_cv = {got.speed_cv}, speed_ms = {got.speed_ms} "
        f"(sigma of the log {got.sigma}); excess variance by window (ms): "
        + ", ".join(f"{w}: {v:.5f}" for w, v in sorted(got.excess.items()))
        + "; over independent draws' by window: "
        + ", ".join(f"{w}: {v}x" for w, v in sorted(got.ratio.items()))
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
