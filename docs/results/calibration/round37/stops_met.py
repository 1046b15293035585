"""The stops the device calls met in a lab grid, beside the idle probe's and the runs' steal
(the thirty-seventh round, part 2, docs/results/calibration.md).

**Rule.** Every run's device timeline (``runs/VARIANT/L*-r*.trace.json``) split by
lanes.lab.call_clocks: per variant and level, over the repeats, the calls, the shares of their
wall time that were CPU, run delay and rest (neither: on these single-threaded CPU devices, the
hypervisor's stops), the stops (rests over 0.1 ms) per second of the calls' exposure and their
p50 / p90 / p99 / max, the slowest 1 % of calls' rest and run-delay shares, and the runs' steal
from /proc/stat (``server.steal_cpu_s`` over the window, in cores) beside the calls' rest in
cores (the calls' rest summed over the window). Then the stops' lengths pooled over the grids
against the idle probe's (round 36's stops.py files), quantile by quantile.

Run, from the repository root:
  PYTHONPATH=bench/calibrate .venv/bin/python \\
    docs/results/calibration/round37/stops_met.py GRID... \\
    [--idle round36/out/idle-1.json ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from lanes.lab import call_clocks

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "round36"))
from stops_scenario import stop_lengths

VARIANTS = ("fifo", "sjf", "independent", "default")
QS = (0.5, 0.75, 0.9, 0.95, 0.99, 1.0)


def runs(grid: Path) -> list[tuple[str, float, dict[str, Any], list[tuple[float, float, float]]]]:
    """``(variant, offered rps, run file, calls)`` of every run of a grid with a timeline."""
    out = []
    for f in sorted(grid.glob("runs/*/L*-r*.json")):
        if f.name.endswith(".trace.json"):
            continue
        run = json.loads(f.read_text())
        trace = f.with_name(f.stem + ".trace.json")
        if not trace.is_file():
            continue
        found = call_clocks.calls(json.loads(trace.read_text()))
        out.append((run["variant"], float(run["offered"]["rate_rps"]), run, found))
    return out


def table(all_runs: list[tuple[str, float, dict[str, Any], list[Any]]]) -> list[str]:
    by: dict[tuple[str, float], list[tuple[dict[str, Any], list[Any]]]] = defaultdict(list)
    for variant, rps, run, found in all_runs:
        by[(variant, rps)].append((run, found))
    lines = [
        "| variant | req/s | runs | calls | CPU / run delay / rest share | stops per s | "
        "stop p50 / p90 / p99 / max ms | slowest 1 %: rest / run delay | steal, cores | "
        "calls' rest, cores |",
        "|---|---:|---:|---:|---|---:|---|---|---:|---:|",
    ]
    order = {v: i for i, v in enumerate(VARIANTS)}
    for (variant, rps), items in sorted(
        by.items(), key=lambda kv: (order.get(kv[0][0], 9), kv[0][1])
    ):
        pooled = [c for _, found in items for c in found]
        s = call_clocks.summarise(pooled)
        if s is None:
            continue
        window = sum(float(run["measure_s"]) for run, _ in items)
        steal = sum(float(run["server"]["steal_cpu_s"]) for run, _ in items) / window
        rest = s["shares"]["rest"] * s["wall_s"] / window
        st = s["stops"]
        ms = st["ms"] or {}
        sh = s["shares"]
        lines.append(
            f"| {variant} | {rps:.0f} | {len(items)} | {s['calls']} | "
            f"{sh['cpu']:.3f} / {sh['run_delay']:.3f} / {sh['rest']:.4f} | {st['per_s']:.2f} | "
            f"{ms.get('p50', 0):.2f} / {ms.get('p90', 0):.2f} / {ms.get('p99', 0):.2f} / "
            f"{st['max_ms'] or 0:.2f} | {s['tail']['rest']:.3f} / {s['tail']['run_delay']:.3f} | "
            f"{steal:.4f} | {rest:.4f} |"
        )
    return lines


def met_lengths(all_runs: list[tuple[str, float, dict[str, Any], list[Any]]]) -> list[float]:
    """Every stop the calls met, ms."""
    return [
        r
        for *_, found in all_runs
        for wall, cpu, delay in found
        if (r := max(0.0, wall - cpu - delay)) > call_clocks.STOP_MIN_MS
    ]


def lengths_table(rows: list[tuple[str, list[float]]]) -> list[str]:
    head = " | ".join(f"p{q * 100:g}" if q < 1 else "max" for q in QS)
    lines = [
        f"| stops | count | mean ms | {head} | share of stop time in stops over 5 ms |",
        "|---|---:|---:|" + "---:|" * len(QS) + "---:|",
    ]
    for name, xs in rows:
        if not xs:
            lines.append(f"| {name} | 0 | | " + "| " * len(QS) + "|")
            continue
        a = np.array(xs)
        qs = " | ".join(f"{v:.2f}" for v in np.quantile(a, QS))
        long = a[a > 5].sum() / a.sum()
        lines.append(f"| {name} | {len(a)} | {a.mean():.2f} | {qs} | {long:.2f} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("grids", nargs="+", type=Path, help="lab results folders with timelines")
    ap.add_argument("--idle", nargs="*", type=Path, default=[], help="stops.py --json files")
    ap.add_argument("--json", type=Path, help="write the stops' lengths and each run's rate")
    args = ap.parse_args(argv)
    every = []
    length_rows = []
    for grid in args.grids:
        found = runs(grid)
        if not found:
            print(f"stops_met.py: {grid}: no run with a timeline", file=sys.stderr)
            return 2
        print(f"## {grid.name}\n")
        print("\n".join(table(found)) + "\n")
        every += found
        length_rows.append((f"met by the calls, {grid.name}", met_lengths(found)))
    if args.idle:
        length_rows.append(("idle probe (round 36)", stop_lengths(args.idle)))
    print("## The stops' lengths\n")
    print("\n".join(lengths_table(length_rows)))
    if args.json:
        rates = [s["stops"]["per_s"] for *_, f in every if (s := call_clocks.summarise(f))]
        doc = {"lengths_ms": met_lengths(every), "run_per_s": rates}
        tmp = args.json.with_name(args.json.name + ".tmp")
        tmp.write_text(json.dumps(doc))
        tmp.replace(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
