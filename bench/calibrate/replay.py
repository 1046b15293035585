"""Each lab run simulated with what that run had: its own arrivals and its own speed.

A grid's p99 near the knee is the mean over repeats whose p99s spread twice over or more, and a
scenario carries neither the repeat's arrivals nor the host's speed that hour. This asks, run by
run, how much of each run's tail the simulator gets back when it is given them:

- **poisson**: the scenario as it is (Poisson arrivals at the run's offered rate);
- **arrivals**: each model's requests arriving when they arrived at the server (the start of each
  request's ``front`` span, ``lanes serve --trace-requests``), as ``trace`` arrivals (the
  simulator keeps their bursts and rescales them to the rate, here their own rate); only the
  span that every model's arrivals cover is replayed, since a run's request spans can begin with
  one model alone for up to a second;
- **arrivals + speed**: as well, every runtime call's cost (``gpu.mean_ms`` and ``batch_ms``) x
  the run's speed: **the rule** — the run's runtime calls' CPU (``cpu_ms``) over what the grid's
  ``fifo`` and ``sjf`` runs' calls of the same model and batch size took on average (only pairs
  with at least :data:`MIN_CALLS` calls), summed over the run's calls: 1.05 is a run whose calls
  took 5 % more CPU than the grid's. With ``--speed-base scenario`` the base is the scenario's
  own cost of each call instead (``gpu.mean_ms`` for one request, each ``batch_ms`` point), so
  a run's speed is the hour's as well as its own: 1.20 is a run whose calls took 20 % more CPU
  than the scenario was read with;
- **arrivals + speed over time**: the arrivals, and the host's speed as the run's calls felt it
  bin by bin (``--bin-ms``, default 250) as the scenario's ``host.speed_series``: **the rule** —
  a bin's factor is the same ratio over the calls that started in it (a bin without such calls
  keeps the bin before's, the first 1.0), so a slow spell comes when the run had it. The series
  covers the replayed span and repeats with it (the simulator loops a trace after its span), and
  as every speed process it scales every phase that asks for a core, not the calls alone.

What the simulator then still misses in a run is neither its arrivals nor its mean speed: the
scheduling model, or what varies within the run. Per run: the lab's p99 (over the run's whole
window, as the grid's tables), then the simulator's under each of the three (mean over seeds);
per level, the means over the repeats and each one's error against the lab's mean.

Variants are simulated as against_demo.py ``--grid`` does (:data:`GRID_AS_SIMULATED`).

Run:  python bench/calibrate/replay.py GRID --scenario FILE [--variants fifo,sjf]
      [--rates 600,800] [--seeds 3] [--requests 40000] [--bin-ms 250]
      [--speed-base grid|scenario] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from against_demo import GRID_AS_SIMULATED, predicted
from compare import emit
from hour_speed import ENGINE_RUNS, MIN_CALLS, at_hour

from lanes.sim.scenario import Scenario, Trace

# MIN_CALLS: a (model, batch size) pair enters a run's speed when the grid's engine runs
# (ENGINE_RUNS: the variants whose calls give the grid's mean CPU) hold this many of its calls;
# the same rule as hour_speed.py's.
FORMS = ("poisson", "arrivals", "arrivals + speed", "arrivals + speed over time")
BIN_MS = 250.0
"""The default width of a bin of the speed over time, ms."""


@dataclass(frozen=True)
class Run:
    """One lab run as replay.py reads it."""

    id: str
    variant: str
    rate: float
    p99: float
    arrivals: dict[str, tuple[float, ...]]
    """Model → arrival times at the server, s from the first replayed one, sorted."""
    calls: tuple[tuple[str, int, float], ...]
    """Every runtime call as ``(model, batch size, cpu_ms)``."""
    starts: tuple[float, ...] = ()
    """Each of ``calls``' start, s on the arrivals' clock (negative: before the replayed span)."""


def fronts(trace: dict[str, Any]) -> dict[str, list[float]]:
    """Model → its requests' arrivals at the server (each ``front`` span's start), µs on the
    trace's clock, in the trace's order."""
    model_of = {
        ev["id"]: ev["name"]
        for ev in trace["traceEvents"]
        if ev.get("cat") == "request" and ev.get("ph") == "b" and "args" in ev
    }
    per: dict[str, list[float]] = {}
    for ev in trace["traceEvents"]:
        if ev.get("cat") == "request" and ev.get("ph") == "b" and ev.get("name") == "front":
            model = model_of.get(ev["id"])
            if model is not None:
                per.setdefault(model, []).append(ev["ts"])
    return per


def origin(trace: dict[str, Any]) -> float:
    """The start of the span every model's arrivals cover, s on the trace's clock (0 when the
    trace holds no arrivals): :func:`arrivals`' time 0."""
    per = fronts(trace)
    return max(min(ts) for ts in per.values()) / 1e6 if per else 0.0


def arrivals(trace: dict[str, Any]) -> dict[str, tuple[float, ...]]:
    """Model → its requests' arrivals at the server (:func:`fronts`, s), cut to the span every
    model's arrivals cover and shifted to start at 0."""
    per = {model: [t / 1e6 for t in ts] for model, ts in fronts(trace).items()}
    if not per:
        return {}
    start = origin(trace)
    end = min(max(ts) for ts in per.values())
    return {
        model: tuple(t - start for t in sorted(ts) if start <= t <= end)
        for model, ts in sorted(per.items())
    }


def _timed_calls(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        ev for ev in trace["traceEvents"] if ev.get("ph") == "X" and "cpu_ms" in ev.get("args", {})
    ]


def calls(trace: dict[str, Any]) -> tuple[tuple[str, int, float], ...]:
    """Every runtime call of the trace that carries its CPU: ``(model, batch size, cpu_ms)``."""
    return tuple(
        (ev["args"]["model"], int(ev["args"]["batch_size"]), float(ev["args"]["cpu_ms"]))
        for ev in _timed_calls(trace)
    )


def call_starts(trace: dict[str, Any]) -> tuple[float, ...]:
    """Each of :func:`calls`' start, s from :func:`origin`."""
    zero = origin(trace)
    return tuple(ev["ts"] / 1e6 - zero for ev in _timed_calls(trace))


def mean_cpu(runs: list[Run]) -> dict[tuple[str, int], float]:
    """(model, batch size) → the mean ``cpu_ms`` of its calls over the engine runs, for the
    pairs with at least :data:`MIN_CALLS` calls."""
    per: dict[tuple[str, int], list[float]] = {}
    for run in runs:
        if run.variant in ENGINE_RUNS:
            for model, n, cpu in run.calls:
                per.setdefault((model, n), []).append(cpu)
    return {k: statistics.fmean(xs) for k, xs in per.items() if len(xs) >= MIN_CALLS}


def scenario_costs(scenario: Scenario) -> dict[tuple[str, int], float]:
    """(model, batch size) → the scenario's cost of that call, ms: each service's ``gpu.mean_ms``
    for a batch of one and its ``batch_ms`` points — the base of ``--speed-base scenario``."""
    out = {}
    for s in scenario.services:
        out[(s.name, 1)] = s.gpu.mean_ms
        if s.batching is not None:
            out.update({(s.name, int(n)): ms for n, ms in s.batching.batch_ms})
    return out


def speed(run: Run, means: dict[tuple[str, int], float]) -> float:
    """The module docs' rule: the run's calls' CPU over the grid's mean for the same calls
    (1.0 when none of its calls has a mean)."""
    pairs = [(cpu, means[(m, n)]) for m, n, cpu in run.calls if (m, n) in means]
    expected = sum(e for _, e in pairs)
    return sum(c for c, _ in pairs) / expected if expected else 1.0


def speed_series(
    run: Run, means: dict[tuple[str, int], float], bin_s: float
) -> tuple[list[float], float]:
    """The module docs' rule for the speed over time: one factor per bin over the replayed span
    (the last arrival), and the bins' width, s — stretched so that the bins end with the
    simulator's loop of the arrivals (the span and one mean gap of the busiest model)."""
    last = max(ts[-1] for ts in run.arrivals.values())
    busiest = max(run.arrivals.values(), key=len)
    period = last + last / max(1, len(busiest) - 1)
    bins = max(1, round(period / bin_s))
    width = period / bins
    used = [0.0] * bins
    expected = [0.0] * bins
    for (model, n, cpu), start in zip(run.calls, run.starts, strict=True):
        if (model, n) in means and 0 <= start < period:
            i = min(bins - 1, int(start / width))
            used[i] += cpu
            expected[i] += means[(model, n)]
    series, factor = [], 1.0
    for u, e in zip(used, expected, strict=True):
        if e > 0:
            factor = u / e
        series.append(factor)
    return series, width


def with_arrivals(scenario: Scenario, run: Run) -> tuple[Scenario, float]:
    """``scenario`` with each service arriving as the run's requests of its model did, and the
    rate to simulate it at. Each service's share is set to its model's own rate in the run (the
    simulator's rule for a trace: arrivals less one over their span), so that the simulator's
    rescaling leaves every trace as it was recorded."""
    services, rates = [], []
    for s in scenario.services:
        times = run.arrivals.get(s.name, ())
        if len(times) < 2 or times[-1] <= times[0]:
            sys.exit(f"replay: {run.id} holds fewer than two arrivals of {s.name} to replay")
        rate = (len(times) - 1) / (times[-1] - times[0])
        rates.append(rate)
        trace = Trace(Path(f"{run.id}:{s.name}"), times)
        services.append(replace(s, arrival=trace, share=rate))
    return replace(scenario, services=tuple(services)), sum(rates)


def with_speed(scenario: Scenario, factor: float) -> Scenario:
    """``scenario`` with every runtime call's cost (``gpu.mean_ms``, ``batch_ms``) x factor
    (hour_speed.at_hour's rule)."""
    return at_hour(scenario, factor)


def load(grid: Path, variants: list[str], rates: list[float] | None) -> list[Run]:
    """The grid's runs of ``variants`` (the engine runs as well, for the mean CPU) at ``rates``
    (every rate when None), each with its trace."""
    out = []
    for variant in sorted(set(variants) | set(ENGINE_RUNS)):
        folder = grid / "runs" / variant
        for path in sorted(folder.glob("L*-r*.json")):
            if path.name.endswith(".trace.json"):
                continue
            result = json.loads(path.read_text())
            rate = float(result["offered"]["rate_rps"])
            if variant not in ENGINE_RUNS and (rates is not None and rate not in rates):
                continue
            trace_path = path.with_name(path.stem + ".trace.json")
            if not trace_path.is_file():
                sys.exit(f"replay: {trace_path} is missing (run the grid with --trace-requests)")
            trace = json.loads(trace_path.read_text())
            out.append(
                Run(
                    f"{variant}/{path.stem}",
                    variant,
                    rate,
                    float(result["load"]["latency_ms"]["p99"]),
                    arrivals(trace),
                    calls(trace),
                    call_starts(trace),
                )
            )
    return out


def replayed(
    scenario: Scenario,
    run: Run,
    factor: float,
    seeds: int,
    requests: int,
    series: tuple[list[float], float] | None = None,
) -> dict[str, float]:
    """The simulator's p99 for ``run`` under each of :data:`FORMS` (mean over seeds); the last
    form only when ``series`` (:func:`speed_series`) is given."""
    replayed, rate = with_arrivals(scenario, run)
    forms = {
        "poisson": (scenario, run.rate),
        "arrivals": (replayed, rate),
        "arrivals + speed": (with_speed(replayed, factor), rate),
    }
    if series is not None:
        values, width = series
        host = replace(
            replayed.host,
            speed_cv=0.0,
            speed_ms=0.0,
            speed_series=tuple(values),
            speed_series_ms=width * 1e3,
        )
        forms["arrivals + speed over time"] = (replace(replayed, host=host), rate)
    return {
        name: predicted(sc, [run.variant], [r], seeds, requests, GRID_AS_SIMULATED)[
            (run.variant, r)
        ]["p99"]
        for name, (sc, r) in forms.items()
    }


def add_selection(ap: argparse.ArgumentParser) -> None:
    """The ``--variants`` and ``--rates`` options (read back by :func:`variants_and_rates`)."""
    ap.add_argument("--variants", default="fifo,sjf", help="comma-separated (default fifo,sjf)")
    ap.add_argument("--rates", default=None, help="comma-separated offered rates (default all)")


def variants_and_rates(
    ap: argparse.ArgumentParser, args: argparse.Namespace
) -> tuple[list[str], list[float] | None]:
    """``--variants`` (each one of :data:`GRID_AS_SIMULATED`) and ``--rates`` (None: all),
    or the parser's error naming the bad value."""
    variants = [v for v in args.variants.split(",") if v]
    unknown = [v for v in variants if v not in GRID_AS_SIMULATED]
    if unknown:
        ap.error(f"--variants: {', '.join(unknown)} not one of {', '.join(GRID_AS_SIMULATED)}")
    try:
        rates = None if args.rates is None else [float(r) for r in args.rates.split(",")]
    except ValueError:
        ap.error(f"--rates must be comma-separated numbers, not {args.rates!r}")
    return variants, rates


def error(pred: float, meas: float) -> str:
    return f"{(pred - meas) / meas * 100:+.0f} %"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("grid", type=Path, help="a calibration grid run with --trace-requests")
    ap.add_argument("--scenario", type=Path, required=True)
    add_selection(ap)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=40_000)
    ap.add_argument(
        "--bin-ms", type=float, default=BIN_MS, help="the speed over time's bins (default 250)"
    )
    ap.add_argument(
        "--speed-base",
        choices=("grid", "scenario"),
        default="grid",
        help="a run's speed against the grid's mean call (default) or the scenario's cost",
    )
    ap.add_argument("--markdown", type=Path, default=None)
    args = ap.parse_args(argv)
    if not args.bin_ms > 0:
        ap.error(f"--bin-ms must be above 0, not {args.bin_ms}")
    variants, rates = variants_and_rates(ap, args)
    if not (args.grid / "runs").is_dir():
        ap.error(f"{args.grid} holds no runs/ folder (a lanes bench run --out folder)")
    scenario = Scenario.load(args.scenario)
    runs = load(args.grid, variants, rates)
    means = mean_cpu(runs) if args.speed_base == "grid" else scenario_costs(scenario)
    chosen = [r for r in runs if r.variant in variants and (rates is None or r.rate in rates)]
    if not chosen:
        ap.error(f"{args.grid} holds no runs of {', '.join(variants)} at those rates")
    rows = [
        "| run | offered/s | speed | lab p99 ms | "
        + " | ".join(f"sim {f} ms" for f in FORMS)
        + " |",
        "|---|---:|---:|---:|" + "---:|" * len(FORMS),
    ]
    levels: dict[tuple[str, float], list[tuple[float, dict[str, float]]]] = {}
    for run in sorted(chosen, key=lambda r: (r.variant, r.rate, r.id)):
        factor = speed(run, means)
        series = speed_series(run, means, args.bin_ms / 1e3)
        got = replayed(scenario, run, factor, args.seeds, args.requests, series)
        levels.setdefault((run.variant, run.rate), []).append((run.p99, got))
        rows.append(
            f"| {run.id} | {run.rate:.0f} | {factor:.3f} | {run.p99:.1f} | "
            + " | ".join(f"{got[f]:.1f}" for f in FORMS)
            + " |"
        )
    per_level = [
        "| variant | offered/s | lab p99 ms (mean) | "
        + " | ".join(f"sim {f} ms, err" for f in FORMS)
        + " |",
        "|---|---:|---:|" + "---:|" * len(FORMS),
    ]
    for (variant, rate), got in sorted(levels.items()):
        lab = statistics.fmean(p for p, _ in got)
        cells = []
        for f in FORMS:
            sim = statistics.fmean(g[f] for _, g in got)
            cells.append(f"{sim:.1f}, {error(sim, lab)}")
        per_level.append(f"| {variant} | {rate:.0f} | {lab:.1f} | " + " | ".join(cells) + " |")
    head = (
        f"{args.scenario} against {args.grid}, each run replayed with its own arrivals and "
        f"speed against the {args.speed_base}'s calls (over time: bins of {args.bin_ms:g} ms); "
        f"{args.seeds} seeds x {args.requests} requests"
    )
    text = "\n".join([head, "", *rows, "", "Per level (means over the repeats):", "", *per_level])
    return emit(text + "\n", args.markdown)


if __name__ == "__main__":
    raise SystemExit(main())
