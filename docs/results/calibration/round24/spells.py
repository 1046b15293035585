"""The host's speed at the scale of runs and of seconds, read where calls hardly queue.

At a grid's lightest levels (default 200 and 400 req/s, levels 0-1 of round 18's experiment)
nothing backs up, so what makes a run's calls dearer is the host, not the load.

- **Per run** (timelines.json): the run's *speed* is its calls' CPU over what the same calls cost
  in the median run of its variant and level, work-weighted: sum over cells (model, batch size,
  at least :data:`MIN_BATCHES` batches) of batches x the run's mean CPU, over batches x the
  cells' median over the runs. Printed: the spread of its log (sd) and its quantiles, per level
  group; and, runs taken in the order they started within each grid, the correlation of the log
  speed between runs ``lag`` apart, with ``tau = -dt / log(rho)`` for an exponential decay.
- **Per second** (the run timelines, ``runs/*/L*-r*.trace.json``, where a grid kept them): each
  run's calls cut into windows of :data:`WINDOW_MS`, a window's speed its calls' CPU over their
  cells' medians in that run; printed: the spread of its log and the share of windows above
  1.10, 1.15, 1.20 and 1.30, at the light levels and in the heavier levels' runs, the runaway
  runs (p99 over twice their variant and level's median run, runaway.py's rule) apart.

Run from the repository root:
  python docs/results/calibration/round24/spells.py GRID [GRID ...] [--levels 0,1]
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import statistics
from pathlib import Path
from typing import Any

MIN_BATCHES = 20
"""Batches a cell needs in a run for it to count in the run's speed."""
WINDOW_MS = 1000.0
"""The window of the per-second reading."""
LAGS = (1, 2, 3, 4, 6)
THRESHOLDS = (1.10, 1.15, 1.20, 1.30)


def run_files(grid: Path) -> list[Path]:
    """A grid's run files (not their timelines)."""
    return [p for p in sorted(grid.glob("runs/*/L*-r*.json")) if not p.name.endswith(".trace.json")]


def run_speeds(grid: Path) -> list[dict[str, Any]]:
    """Every run of ``grid``: variant, level, start, p99 and ``log_speed`` (rule above; None
    when no cell counts), in the order the runs started."""
    timelines = json.loads((grid / "timelines.json").read_text())
    runs = []
    for path in run_files(grid):
        run = json.loads(path.read_text())
        models = (timelines.get(run["id"]) or {}).get("models", {})
        cells = {
            (m, b): (d["batches"], d["cpu_mean_ms"])
            for m, sizes in models.items()
            for b, d in sizes.items()
            if d["batches"] >= MIN_BATCHES
        }
        runs.append(
            {
                "path": path,
                "variant": run["variant"],
                "level": run["level"],
                "start": run["started_unix"],
                "p99": run["load"]["latency_ms"]["p99"],
                "cells": cells,
            }
        )
    by_cell: dict[tuple[Any, ...], list[float]] = collections.defaultdict(list)
    for r in runs:
        for cell, (_, cpu) in r["cells"].items():
            by_cell[(r["variant"], r["level"], cell)].append(cpu)
    median = {k: statistics.median(v) for k, v in by_cell.items() if len(v) >= 3}
    for r in runs:
        num = den = 0.0
        for cell, (n, cpu) in r["cells"].items():
            if (m := median.get((r["variant"], r["level"], cell))) is not None:
                num, den = num + n * cpu, den + n * m
        r["log_speed"] = math.log(num / den) if den else None
    return sorted(runs, key=lambda r: r["start"])


def mark_runaway(runs: list[dict[str, Any]]) -> None:
    """Set each run's ``runaway``: its p99 over twice its variant and level's median run."""
    p99s: dict[tuple[str, int], list[float]] = collections.defaultdict(list)
    for r in runs:
        p99s[(r["variant"], r["level"])].append(r["p99"])
    median = {k: statistics.median(v) for k, v in p99s.items()}
    for r in runs:
        r["runaway"] = r["p99"] > 2 * median[(r["variant"], r["level"])]


def quantile(xs: list[float], q: float) -> float:
    """The ``q`` quantile of ``xs`` (nearest rank below)."""
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def windows_of(trace_path: Path) -> dict[int, float]:
    """A run's speed per window (rule above) from its timeline: window index (from the run's
    first call) to speed, windows with calls worth 5 % of the window at their medians."""
    events = json.loads(trace_path.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    calls = [
        (e["ts"] / 1e3, e["args"])
        for e in events
        if e.get("ph") == "X" and "cpu_ms" in e.get("args", {})
    ]
    if not calls:
        return {}
    t0 = min(t for t, _ in calls)
    cells: dict[tuple[str, int], list[float]] = collections.defaultdict(list)
    for _, a in calls:
        cells[(a["model"], a["batch_size"])].append(a["cpu_ms"])
    median = {k: statistics.median(v) for k, v in cells.items() if len(v) >= 10}
    num: dict[int, float] = collections.defaultdict(float)
    den: dict[int, float] = collections.defaultdict(float)
    for t, a in calls:
        if (m := median.get((a["model"], a["batch_size"]))) is not None:
            w = int((t - t0) // WINDOW_MS)
            num[w], den[w] = num[w] + a["cpu_ms"], den[w] + m
    return {w: num[w] / den[w] for w in num if den[w] > 0.05 * WINDOW_MS}


def window_speeds(trace_path: Path) -> list[float]:
    """A run's per-window speeds (:func:`windows_of`)."""
    return list(windows_of(trace_path).values())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("grids", type=Path, nargs="+")
    ap.add_argument("--levels", default="0,1", help="the light levels (default 0,1)")
    args = ap.parse_args(argv)
    light = {int(x) for x in args.levels.split(",")}
    for g in args.grids:
        if not (g / "timelines.json").is_file():
            ap.error(f"{g} has no timelines.json: run bench/calibrate/timelines.py on it first")
    per_grid = [run_speeds(g) for g in args.grids]
    runs = [r for rs in per_grid for r in rs]
    mark_runaway(runs)
    print(f"per run: {len(runs)} runs of {len(args.grids)} grids")
    print("| runs | n | sd of log speed | q10 | median | q90 | q95 | max |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    groups = [("light", lambda r: r["level"] in light)] + [
        (f"level {lv}", lambda r, lv=lv: r["level"] == lv)
        for lv in sorted({r["level"] for r in runs} - light)
    ]
    for name, keep in groups:
        xs = [r["log_speed"] for r in runs if keep(r) and r["log_speed"] is not None]
        if len(xs) < 2:
            continue
        sp = [math.exp(x) for x in xs]
        print(
            f"| {name} | {len(xs)} | {statistics.pstdev(xs):.4f} | {quantile(sp, 0.1):.3f} | "
            f"{statistics.median(sp):.3f} | {quantile(sp, 0.9):.3f} | {quantile(sp, 0.95):.3f} | "
            f"{max(sp):.3f} |"
        )
    print()
    print("between runs, in the order they started (every level):")
    print("| lag | median dt s | rho | tau s |")
    print("|---:|---:|---:|---:|")
    for lag in LAGS:
        pairs = [
            (rs[i]["log_speed"], rs[i + lag]["log_speed"], rs[i + lag]["start"] - rs[i]["start"])
            for rs in per_grid
            for i in range(len(rs) - lag)
            if rs[i]["log_speed"] is not None and rs[i + lag]["log_speed"] is not None
        ]
        if len(pairs) < 3:
            continue
        a, b, dt = zip(*pairs, strict=True)
        rho, gap = statistics.correlation(a, b), statistics.median(dt)
        tau = f"{-gap / math.log(rho):.1f}" if 0 < rho < 1 else "-"
        print(f"| {lag} | {gap:.1f} | {rho:.2f} | {tau} |")
    traced = [r for r in runs if r["path"].with_suffix(".trace.json").is_file()]
    if not traced:
        print("\nper second: no run timelines kept in these grids")
        return 0
    print(f"\nper second (windows of {WINDOW_MS:g} ms, {len(traced)} runs with timelines):")
    head = " | ".join(f"> {t:.2f}" for t in THRESHOLDS)
    print(f"| runs | runs n | windows | sd of log speed | {head} |")
    print("|---|---:|---:|---:|" + "---:|" * len(THRESHOLDS))
    kinds = [
        ("light levels", lambda r: r["level"] in light),
        ("heavier, not runaway", lambda r: r["level"] not in light and not r["runaway"]),
        ("heavier, runaway", lambda r: r["level"] not in light and r["runaway"]),
    ]
    for name, keep in kinds:
        chosen = [r for r in traced if keep(r)]
        ws = [w for r in chosen for w in window_speeds(r["path"].with_suffix(".trace.json"))]
        if not ws:
            continue
        shares = " | ".join(f"{100 * sum(w > t for w in ws) / len(ws):.1f} %" for t in THRESHOLDS)
        sd = statistics.pstdev(math.log(w) for w in ws)
        print(f"| {name} | {len(chosen)} | {len(ws)} | {sd:.4f} | {shares} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
