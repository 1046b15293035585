"""Which part of a request a slow spell lengthens (the twentieth round).

For each ``fifo`` and ``sjf`` run of a grid at the given rates, the server-side request spans
(``lanes serve --trace-requests``) cut into bins of ``--bin`` seconds as tails.py cuts them; the
run's worst bin is the one holding most of the run's slowest 1 %. For each part of a request's
span (docs/metrics.md: the batch's wait ``batch_wait_ms``, its call ``run_ms``, the hand-offs and
the hooks), the mean over that bin's requests over the mean over the run's, and the part's share
of the worst bin's mean ``total_ms``. Prints, per rate, the median over the runs.

Run:  python docs/results/calibration/round20/spells.py GRID [--rates 600,800] [--bin 0.5]
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from pathlib import Path

from tails import engine_runs, p99  # beside this file

PARTS = (
    "decode_ms",
    "pre_wait_ms",
    "pre_ms",
    "pre_return_ms",
    "batch_wait_ms",
    "run_ms",
    "handoff_ms",
    "answer_wake_ms",
    "post_wait_ms",
    "post_ms",
    "post_return_ms",
    "total_ms",
    "batch_size",
)
"""The span's parts read (``scheduled_ms`` is ``batch_wait_ms`` + ``run_ms`` + the rest), and the
size of the request's batch (its share column is not a share)."""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("grid", type=Path)
    ap.add_argument("--rates", default="600,800")
    ap.add_argument("--bin", type=float, default=0.5)
    args = ap.parse_args()
    rates = {float(r) for r in args.rates.split(",")}
    ratio: dict[tuple[float, str], list[float]] = defaultdict(list)
    share: dict[tuple[float, str], list[float]] = defaultdict(list)
    for _, run, events in engine_runs(args.grid, rates):
        rate = run["offered"]["rate_rps"]
        spans: dict[int, list[dict[str, float]]] = defaultdict(list)
        for e in events:
            a = e.get("args", {})
            if e.get("ph") == "b" and e.get("cat") == "request" and "total_ms" in a:
                spans[int(e["ts"] / 1e6 / args.bin)].append(a)
        bins = [b for b in spans if len(spans[b]) >= 20]
        every = [a for b in bins for a in spans[b]]
        cut = p99([a["total_ms"] for a in every])
        worst = max(bins, key=lambda b: sum(a["total_ms"] > cut for a in spans[b]))
        total = statistics.fmean(a["total_ms"] for a in spans[worst])
        # a call per request: its batch's call over the batch's size, bin against run
        per = [a["run_ms"] / max(1, a.get("batch_size", 1)) for a in every]
        worst_per = [a["run_ms"] / max(1, a.get("batch_size", 1)) for a in spans[worst]]
        ratio[(rate, "run_ms per request")].append(
            statistics.fmean(worst_per) / statistics.fmean(per)
        )
        share[(rate, "run_ms per request")].append(statistics.fmean(worst_per) / total)
        for part in PARTS:
            run_mean = statistics.fmean(a.get(part, 0.0) for a in every)
            bin_mean = statistics.fmean(a.get(part, 0.0) for a in spans[worst])
            if run_mean > 0:
                ratio[(rate, part)].append(bin_mean / run_mean)
            share[(rate, part)].append(bin_mean / total)
    for rate in sorted(rates):
        print(f"\n{rate:.0f} req/s: each part's mean in the worst bin over the run's, and its")
        print("share of the worst bin's mean total (median over the runs)\n")
        print("| part | worst bin / run | share of the worst bin's total |")
        print("|---|---:|---:|")
        for part in (*PARTS, "run_ms per request"):
            if ratio.get((rate, part)):
                r = statistics.median(ratio[(rate, part)])
                s = statistics.median(share[(rate, part)])
                print(f"| {part} | {r:.2f} | {s:.1%} |")


if __name__ == "__main__":
    main()
