"""Where a run's tail comes from near the knee (the twentieth round).

For each ``fifo`` and ``sjf`` run of a grid at the given rates, the server-side latency (the
request spans' ``total_ms``) cut into bins of ``--bin`` seconds, and per bin the requests that
arrived, their p99, and the host's speed as the calls show it (the median ``cpu_ms`` of
``char_cnn``'s batches of one, over the run's median). Prints per run how many of the run's slowest
1 % fall into its worst bin and into its two worst, and that bin's calls' CPU over the run's; and
over all runs the rank correlation (Spearman) of a bin's p99 with its arrivals and with its calls'
CPU: a tail made by a few slow spells of the host shows as a high share in the worst bin and a
correlation with the calls' CPU; one made by the arrivals' bunching, with the arrivals.

Run:  python docs/results/calibration/round20/tails.py GRID [--rates 600,800] [--bin 0.5]
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def p99(xs: list[float]) -> float:
    """The 99th percentile of ``xs``: its order statistic at ``0.99 n``."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(0.99 * len(xs)))]


def engine_runs(
    grid: Path, rates: set[float] | None = None
) -> Iterator[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    """Each ``fifo`` and ``sjf`` run of ``grid`` (at ``rates``, or all): its variant, its run
    file and its trace's events (also read by warm.py and spells.py)."""
    for variant in ("fifo", "sjf"):
        for run_file in sorted((grid / "runs" / variant).glob("L*-r*.json")):
            if run_file.name.endswith(".trace.json"):
                continue
            run = json.loads(run_file.read_text())
            if rates is not None and run["offered"]["rate_rps"] not in rates:
                continue
            trace = json.loads(run_file.with_name(run_file.stem + ".trace.json").read_text())
            yield variant, run, trace["traceEvents"]


def ranks(xs: list[float]) -> list[float]:
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    out = [0.0] * len(xs)
    for r, i in enumerate(order):
        out[i] = float(r)
    return out


def spearman(xs: list[float], ys: list[float]) -> float:
    return statistics.correlation(ranks(xs), ranks(ys))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("grid", type=Path)
    ap.add_argument("--rates", default="600,800")
    ap.add_argument("--bin", type=float, default=0.5)
    args = ap.parse_args()
    rates = {float(r) for r in args.rates.split(",")}
    rows, pooled = [], defaultdict(list)
    for variant, run, events in engine_runs(args.grid, rates):
        rate = run["offered"]["rate_rps"]
        lat: dict[int, list[float]] = defaultdict(list)
        cpu: dict[int, list[float]] = defaultdict(list)
        for e in events:
            a = e.get("args", {})
            if e.get("ph") == "b" and e.get("cat") == "request" and "total_ms" in a:
                lat[int(e["ts"] / 1e6 / args.bin)].append(a["total_ms"])
            elif e.get("ph") == "X" and a.get("model") == "char_cnn" and a.get("batch_size") == 1:
                cpu[int(e["ts"] / 1e6 / args.bin)].append(a["cpu_ms"])
        bins = sorted(b for b in lat if len(lat[b]) >= 20)
        everything = [x for b in bins for x in lat[b]]
        cut = p99(everything)
        slow = {b: sum(x > cut for x in lat[b]) for b in bins}
        total = sum(slow.values()) or 1
        worst = sorted(slow.values(), reverse=True)
        top = max(bins, key=lambda b: slow[b])
        calls = [x for b in bins for x in cpu.get(b, [])]
        speed = (
            f"{statistics.median(cpu[top]) / statistics.median(calls):.2f}"
            if len(cpu.get(top, [])) >= 5 and calls
            else "-"
        )
        rows.append(
            f"| {variant} | {rate:.0f} | {run['repeat']} | {cut:.1f} | {len(bins)} | "
            f"{worst[0] / total:.0%} | {sum(worst[:2]) / total:.0%} | {speed} |"
        )
        for b in bins:
            if len(cpu.get(b, [])) >= 5:
                pooled[(variant, rate)].append(
                    (p99(lat[b]), len(lat[b]), statistics.median(cpu[b]))
                )
    print(f"bins of {args.bin:g} s; the slowest 1 % of a run's requests (server total_ms):\n")
    print(
        "| variant | req/s | repeat | p99 ms | bins | in the worst bin | in the worst two "
        "| char_cnn's CPU in the worst bin / the run's |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    print("\nper bin, rank correlation of its p99 with its arrivals and its calls' CPU:\n")
    print("| variant | req/s | bins | with arrivals | with char_cnn's CPU |")
    print("|---|---:|---:|---:|---:|")
    for (variant, rate), pts in sorted(pooled.items()):
        p = [x[0] for x in pts]
        print(
            f"| {variant} | {rate:.0f} | {len(pts)} | {spearman(p, [x[1] for x in pts]):+.2f} | "
            f"{spearman(p, [x[2] for x in pts]):+.2f} |"
        )


if __name__ == "__main__":
    main()
