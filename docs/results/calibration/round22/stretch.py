"""How much overlapping runtime calls slow each other, measured again on today's build (the
twenty-second round; the ninth round's lab-round9/scratch/stretch.py, which gave the
``host.call_stretch`` table ``[1.0, 1.25, 1.18, 1.05]``, read the same way).

For each ``line_rnn_zh`` batch of one in the window, its call as timelines.py takes it
(:func:`timelines.call_span`: the slice's end minus its ``measured_ms``), the time-average number
k of runtime calls running during it (itself included), binned to halves (4 and up pooled). Per
variant and offered rate, each bin's count and median call in ms; then over the rates given, the
median call per bin against processor sharing of the two cores (the k = 1 median times max(1, k/2)),
which is the stretch s(k) the simulator's key multiplies by.

Run from bench/calibrate, with PYTHONPATH=. :
  python ../../docs/results/calibration/round22/stretch.py GRID [GRID ...]
"""

from __future__ import annotations

import bisect
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from timelines import call_span

MODEL = "line_rnn_zh"
VARIANTS = ("fifo", "independent")
MIN_CALLS = 20


def running_means(spans: list[tuple[float, float]]) -> list[float]:
    """Per span, the time-average number of spans running during it (itself included)."""
    edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    times, counts, n = [], [], 0
    for t, d in edges:
        n += d
        times.append(t)
        counts.append(n)
    out = []
    for s, e in spans:
        i = bisect.bisect_right(times, s) - 1
        cur, t, acc = counts[i] if i >= 0 else 0, s, 0.0
        j = i + 1
        while j < len(times) and times[j] < e:
            acc += cur * (times[j] - t)
            t, cur = times[j], counts[j]
            j += 1
        acc += cur * (e - t)
        out.append(acc / (e - s) if e > s else cur)
    return out


def binned(grids: list[Path], variant: str) -> dict[float, dict[float, list[float]]]:
    """rate → bin of k → the calls' durations (ms)."""
    out: dict[float, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for grid in grids:
        for path in sorted(grid.glob(f"runs/{variant}/L*-r*.trace.json")):
            run = json.loads(path.with_name(path.name.replace(".trace.json", ".json")).read_text())
            trace = json.loads(path.read_text())
            jobs = [e for e in trace["traceEvents"] if e.get("cat") == "job" and e.get("ph") == "X"]
            jobs = [e for e in jobs if not e["args"].get("failed")]
            spans = [call_span(e) for e in jobs]
            for ev, k in zip(jobs, running_means(spans), strict=True):
                a = ev["args"]
                if a["model"] == MODEL and a["batch_size"] == 1:
                    out[run["offered"]["rate_rps"]][min(4.0, round(k * 2) / 2)].append(
                        a["measured_ms"]
                    )
    return out


def main(argv: list[str]) -> int:
    grids = [Path(g) for g in argv]
    for variant in VARIANTS:
        by_rate = binned(grids, variant)
        print(f"**{variant}**: {MODEL}'s batches of one, count / median call ms by calls running\n")
        bins = sorted({k for r in by_rate.values() for k in r})
        print("| offered/s | " + " | ".join(f"k = {k:g}" for k in bins) + " |")
        print("|---:|" + "---:|" * len(bins))
        pooled: dict[float, list[float]] = defaultdict(list)
        for rate in sorted(by_rate):
            cells = []
            for k in bins:
                xs = by_rate[rate].get(k, [])
                pooled[k] += xs
                cells.append(
                    f"{len(xs)} / {statistics.median(xs):.2f}" if len(xs) >= MIN_CALLS else "-"
                )
            print(f"| {rate:g} | " + " | ".join(cells) + " |")
        one = statistics.median(pooled[1.0])
        stretch = [
            f"k = {k:g}: {statistics.median(pooled[k]) / (one * max(1.0, k / 2)):.2f}"
            for k in bins
            if len(pooled[k]) >= MIN_CALLS
        ]
        print(f"\nall rates pooled, the median over processor sharing: {', '.join(stretch)}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
