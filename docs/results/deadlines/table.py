"""The tables of docs/results/deadlines.md from a lab results folder's summary.json: per variant
(in the experiment's order) and level, goodput with each repeat's, SLO attainment, p50, p99,
the server's dropped requests (504: deadline passed) per run and the generators' send delay
p99; with ``--pairs A:B,...``, each pair's goodput ratio A / B per level, repeat by repeat (the
runs of one repeat ran back to back, so each ratio is of interleaved runs), and their median.

Run:  python docs/results/deadlines/table.py RESULTS/summary.json [--pairs A:B,C:D]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("summary", type=Path)
    ap.add_argument("--pairs", default="", help="A:B,... goodput ratios, repeat by repeat")
    args = ap.parse_args(argv)
    s = json.loads(args.summary.read_text())
    print(
        "| variant | offered req/s | goodput req/s (repeats) | SLO attainment | p50 ms | p99 ms "
        "| dropped (504) a run | send delay p99 ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, v in s["variants"].items():
        for lv in v["levels"]:
            lat, by = lv["latency_ms"], lv["goodput_rps_by_repeat"].values()
            print(
                f"| {name} | {lv['offered_rps']:.0f} | {lv['goodput_rps']:.0f} "
                f"({', '.join(f'{x:.0f}' for x in by)}) | {lv['slo_attainment']:.3f} "
                f"| {lat['p50']:.1f} | {lat['p99']:.0f} | {lv['dropped']:.0f} "
                f"| {lv['send_delay_p99_ms']:.0f} |"
            )
    pairs = [p.split(":") for p in args.pairs.split(",") if p]
    if pairs:
        print("\n| goodput ratio | offered req/s | by repeat | median |")
        print("|---|---:|---:|---:|")
    for a, b in pairs:
        for la, lb in zip(s["variants"][a]["levels"], s["variants"][b]["levels"], strict=True):
            ga, gb = la["goodput_rps_by_repeat"], lb["goodput_rps_by_repeat"]
            ratios = [ga[r] / gb[r] for r in sorted(ga) if r in gb and gb[r] > 0]
            print(
                f"| {a} / {b} | {la['offered_rps']:.0f} | "
                f"{', '.join(f'{x:.2f}' for x in ratios)} | {statistics.median(ratios):.2f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
