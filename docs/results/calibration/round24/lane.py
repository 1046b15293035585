"""What runs away near the knee: which lane, how its calls change, and what comes first.

Runaway runs as runaway.py takes them (p99 over twice the median run of their variant and level,
at 600-900 req/s: levels 2-4), against the other runs there:

1. **The lane.** Which model's p99 is the run's highest; under ``fifo`` and ``sjf`` (one batch of
   a model in flight), ``line_rnn_zh``'s mean batch, and its batches of 8: their wall time
   (``measured_ms``), their CPU, and the gap from the lane's previous call's end to their start.
2. **The cost.** Each cell's (model, batch size) mean CPU over its median run at the same variant
   and level (timelines.json), and the CPU per request of the calls and of the server beyond them
   (the run's ``process_cpu_s`` less its calls' CPU).
3. **What comes first.** Runs cut into :data:`BIN_MS` bins: the correlation, over a run's bins, of
   ``line_rnn_zh``'s mean batch at ``t`` (its queue) with ``char_cnn``'s mean log CPU over its
   cells' medians in that run at ``t + lag`` bins, averaged over the runs. A host that slows first
   gives the largest correlation at negative lags; a backlog that makes calls dearer, at positive.
4. **Beside other calls.** At the light levels (0-1) under ``fifo`` and ``sjf``, each call's CPU
   and wall time over its cell's median in its run, binned by the time-average number of calls
   running during it (itself included, halves): whether a call costs more CPU while another runs
   on the other core (two vCPUs that share a physical core would).

Parts 1, 3 and 4 read the run timelines (``runs/*/L*-r*.trace.json``); grids without them are
read for part 2 only.

Run from the repository root:
  python docs/results/calibration/round24/lane.py GRID [GRID ...]
"""

from __future__ import annotations

import collections
import itertools
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[3] / "bench" / "calibrate"), str(HERE.parent / "round22")]
from stretch import running_means  # noqa: E402  (round 22's: calls running during each)
from timelines import call_span  # noqa: E402

LEVELS = (2, 3, 4)
LIGHT = (0, 1)
BIN_MS = 250.0
LAGS = range(-4, 5)
LANE = "line_rnn_zh"
SHORT = "char_cnn"


def events(path: Path) -> list[dict[str, Any]]:
    """A run timeline's runtime calls (complete events carrying ``cpu_ms``)."""
    raw = json.loads(path.read_text())
    raw = raw["traceEvents"] if isinstance(raw, dict) else raw
    return [e for e in raw if e.get("ph") == "X" and "cpu_ms" in e.get("args", {})]


def span(e: dict[str, Any]) -> tuple[float, float]:
    """A call's (start, end) in ms (timelines.py's call span: its slice's end less its
    ``measured_ms``)."""
    start, end = call_span(e)
    return start / 1e3, end / 1e3


def load(grids: list[Path]) -> list[dict[str, Any]]:
    """Every run at :data:`LEVELS` and :data:`LIGHT` with its run file, timelines entry and
    timeline path (None where not kept), ``runaway`` set at :data:`LEVELS`."""
    runs = []
    for grid in grids:
        timelines = json.loads((grid / "timelines.json").read_text())
        for path in sorted(grid.glob("runs/*/L*-r*.json")):
            if path.name.endswith(".trace.json"):
                continue
            run = json.loads(path.read_text())
            if run["level"] not in LEVELS + LIGHT:
                continue
            trace = path.with_suffix(".trace.json")
            run["_models"] = (timelines.get(run["id"]) or {}).get("models", {})
            run["_trace"] = trace if trace.is_file() else None
            runs.append(run)
    p99s: dict[tuple[str, int], list[float]] = collections.defaultdict(list)
    for r in runs:
        p99s[(r["variant"], r["level"])].append(r["load"]["latency_ms"]["p99"])
    median = {k: statistics.median(v) for k, v in p99s.items()}
    for r in runs:
        high = r["load"]["latency_ms"]["p99"] > 2 * median[(r["variant"], r["level"])]
        r["_away"] = r["level"] in LEVELS and high
    return runs


def kind(r: dict[str, Any]) -> str:
    return "runaway" if r["_away"] else "other"


def part_lane(runs: list[dict[str, Any]]) -> None:
    heavy = [r for r in runs if r["level"] in LEVELS]
    top = collections.Counter(
        max(r["load"]["models"], key=lambda m: r["load"]["models"][m]["latency_ms"]["p99"])
        for r in heavy
        if r["_away"]
    )
    print(f"1. the lane: {sum(top.values())} runaway runs of {len(heavy)} at levels {LEVELS}")
    print(
        "   the model with the run's highest p99: " + ", ".join(f"{m} {n}" for m, n in top.items())
    )
    print()
    print(
        f"| variant | level | runs | {LANE} mean batch | batches of 8 | wall ms | CPU ms | gap ms |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for variant in ("fifo", "sjf"):
        for level in LEVELS:
            for k in ("other", "runaway"):
                chosen = [
                    r
                    for r in heavy
                    if r["variant"] == variant
                    and r["level"] == level
                    and kind(r) == k
                    and r["_trace"]
                ]
                if not chosen:
                    continue
                means, walls, cpus, gaps = [], [], [], []
                for r in chosen:
                    calls = sorted(
                        ((*span(e), e["args"]["batch_size"], e["args"]["cpu_ms"]))
                        for e in events(r["_trace"])
                        if e["args"]["model"] == LANE
                    )
                    if not calls:
                        continue
                    means.append(statistics.fmean(c[2] for c in calls))
                    for before, c in itertools.pairwise(calls):
                        if c[2] == 8:
                            walls.append(c[1] - c[0])
                            cpus.append(c[3])
                            gaps.append(c[0] - before[1])
                row = (
                    f"| {variant} | {level} | {k} {len(chosen)} | {statistics.median(means):.2f} |"
                )
                if walls:
                    row += (
                        f" {len(walls)} | {statistics.fmean(walls):.1f} | "
                        f"{statistics.fmean(cpus):.1f} | {statistics.fmean(gaps):.2f} |"
                    )
                else:
                    row += " 0 | - | - | - |"
                print(row)
    print()


def part_cost(runs: list[dict[str, Any]]) -> None:
    heavy = [r for r in runs if r["level"] in LEVELS]
    by_cell: dict[tuple[Any, ...], list[float]] = collections.defaultdict(list)
    for r in heavy:
        for m, sizes in r["_models"].items():
            for b, d in sizes.items():
                if d["batches"] >= 5:
                    by_cell[(r["variant"], r["level"], m, b)].append(d["cpu_mean_ms"])
    median = {k: statistics.median(v) for k, v in by_cell.items()}
    cells = [(m, b) for m in (SHORT, LANE) for b in ("1", "2", "4", "8")]
    print("2. the cost: each cell's mean CPU over its median run (median over the runs), and CPU")
    print("   per request")
    print()
    print(
        "| level | runs | "
        + " | ".join(f"{m} {b}" for m, b in cells)
        + " | calls ms/req | server beyond calls ms/req |"
    )
    print("|---:|---|" + "---:|" * (len(cells) + 2))
    for level in LEVELS:
        for k in ("other", "runaway"):
            chosen = [r for r in heavy if r["level"] == level and kind(r) == k]
            if not chosen:
                continue
            row = f"| {level} | {k} {len(chosen)} |"
            for m, b in cells:
                ratios = [
                    r["_models"][m][b]["cpu_mean_ms"] / median[(r["variant"], level, m, b)]
                    for r in chosen
                    if r["_models"].get(m, {}).get(b, {}).get("batches", 0) >= 5
                ]
                row += f" {statistics.median(ratios):.3f} |" if ratios else " - |"
            calls, beyond = [], []
            for r in chosen:
                cpu = sum(
                    d["batches"] * d["cpu_mean_ms"]
                    for s in r["_models"].values()
                    for d in s.values()
                )
                n = r["load"]["requests"]
                calls.append(cpu / n)
                beyond.append((1e3 * r["server"]["process_cpu_s"] - cpu) / n)
            row += f" {statistics.median(calls):.3f} | {statistics.median(beyond):.3f} |"
            print(row)
    print()


def bins_of(trace: Path) -> tuple[list[float | None], list[float | None]]:
    """Per :data:`BIN_MS` bin of a run: the lane's mean batch and :data:`SHORT`'s mean log CPU
    over its cells' medians in the run (None where a bin has no such call, or fewer than 5)."""
    calls = events(trace)
    t0 = min(e["ts"] / 1e3 for e in calls)
    cells: dict[int, list[float]] = collections.defaultdict(list)
    for e in calls:
        if e["args"]["model"] == SHORT:
            cells[e["args"]["batch_size"]].append(e["args"]["cpu_ms"])
    median = {b: statistics.median(v) for b, v in cells.items() if len(v) >= 10}
    batch: dict[int, list[float]] = collections.defaultdict(list)
    cost: dict[int, list[float]] = collections.defaultdict(list)
    for e in calls:
        i, a = int((e["ts"] / 1e3 - t0) // BIN_MS), e["args"]
        if a["model"] == LANE:
            batch[i].append(a["batch_size"])
        elif a["model"] == SHORT and a["batch_size"] in median and a["cpu_ms"] > 0:
            cost[i].append(math.log(a["cpu_ms"] / median[a["batch_size"]]))
    n = max([*batch, *cost]) + 1
    return (
        [statistics.fmean(batch[i]) if batch[i] else None for i in range(n)],
        [statistics.fmean(cost[i]) if len(cost[i]) >= 5 else None for i in range(n)],
    )


def part_lead(runs: list[dict[str, Any]]) -> None:
    print(
        f"3. what comes first: corr({LANE}'s batch at t, {SHORT}'s CPU at t + lag x {BIN_MS:g} ms)"
    )
    print()
    print("| runs | n | " + " | ".join(f"{lag:+d}" for lag in LAGS) + " |")
    print("|---|---:|" + "---:|" * len(LAGS))
    for k in ("other", "runaway"):
        chosen = [r for r in runs if r["level"] in LEVELS and kind(r) == k and r["_trace"]]
        per_lag: dict[int, list[float]] = collections.defaultdict(list)
        for r in chosen:
            batch, cost = bins_of(r["_trace"])
            for lag in LAGS:
                pairs = [
                    (batch[i], cost[i + lag])
                    for i in range(len(batch))
                    if 0 <= i + lag < len(cost)
                    and batch[i] is not None
                    and cost[i + lag] is not None
                ]
                if len(pairs) < 8:
                    continue
                a, b = zip(*pairs, strict=True)
                if len(set(a)) > 1 and len(set(b)) > 1:
                    per_lag[lag].append(statistics.correlation(a, b))
        cells = " | ".join(
            f"{statistics.fmean(per_lag[lag]):+.2f}" if per_lag[lag] else "-" for lag in LAGS
        )
        print(f"| {k} | {len(chosen)} | {cells} |")
    print()


def part_beside(runs: list[dict[str, Any]]) -> None:
    got: dict[tuple[str, int, float], list[tuple[float, float]]] = collections.defaultdict(list)
    for r in runs:
        if r["level"] not in LIGHT or r["variant"] not in ("fifo", "sjf") or not r["_trace"]:
            continue
        calls = events(r["_trace"])
        ks = running_means([span(e) for e in calls])
        cells: dict[tuple[str, int], list[tuple[dict[str, Any], float]]] = collections.defaultdict(
            list
        )
        for e, k in zip(calls, ks, strict=True):
            cells[(e["args"]["model"], e["args"]["batch_size"])].append((e["args"], k))
        for (m, b), xs in cells.items():
            if len(xs) < 20:
                continue
            cpu = statistics.median(a["cpu_ms"] for a, _ in xs)
            wall = statistics.median(a["measured_ms"] for a, _ in xs)
            for a, k in xs:
                got[(m, b, min(3.0, round(2 * k) / 2))].append(
                    (a["cpu_ms"] / cpu, a["measured_ms"] / wall)
                )
    print(f"4. beside other calls: levels {LIGHT}, fifo and sjf, calls of one")
    print()
    print("| model | calls running | calls | CPU / cell median | wall / cell median |")
    print("|---|---:|---:|---:|---:|")
    for (m, b, k), xs in sorted(got.items()):
        if b != 1 or len(xs) < 50:
            continue
        cpu = statistics.median(x for x, _ in xs)
        wall = statistics.median(y for _, y in xs)
        print(f"| {m} | {k:g} | {len(xs)} | {cpu:.3f} | {wall:.3f} |")


def main(argv: list[str]) -> int:
    if not argv:
        sys.exit(__doc__.split("Run from the repository root:")[1].strip())
    grids = [Path(a) for a in argv]
    for g in grids:
        if not (g / "timelines.json").is_file():
            sys.exit(f"lane: {g} has no timelines.json: run bench/calibrate/timelines.py on it")
    runs = load(grids)
    if not any(r["_trace"] for r in runs):
        part_cost(runs)
        print("(no run timelines kept in these grids: parts 1, 3 and 4 need them)")
        return 0
    part_lane(runs)
    part_cost(runs)
    part_lead(runs)
    part_beside(runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
