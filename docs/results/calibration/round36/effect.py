"""What the measured stops alone do to a short call: its wall time on a core that stops as the
probe's did (the thirty-sixth round, part 2, docs/results/calibration.md).

**Rule.** From a ``bench/calibrate/stops.py --json`` file, each core's stops are intervals on its
window of T seconds (start, length). A call of d ms starts at a uniform time in [0, T) on one
core and needs d ms of that core's running time: it runs until a stop begins, waits for its end,
runs on, and so on; its wall time less d is its *delay* (the window wraps around at T). The
stops of a busier hour are the same stops k times as often: the core's intervals overlaid k
times, each copy shifted by an independent uniform offset (wrapped), overlapping ones merged,
which keeps the lengths and multiplies the stolen share by about k. Per call length and k the
script prints the share of calls delayed at all, the delay's p99 and p99.9, and the stolen
share.

Run:  python docs/results/calibration/round36/effect.py FILE [FILE ...] [--calls-ms 1,2,5]
          [--times 1,10,20] [--calls 200000] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np


def stops_of(path: Path) -> list[tuple[float, np.ndarray]]:
    """Each core's window (s) and its stops as rows (start s, length s)."""
    data = json.loads(path.read_text())
    share = data["stop_wait_share"]
    out = []
    for core in data["cores"]:
        gaps = data["gaps"][str(core["cpu"])]
        rows = [(at, n / 1e6) for at, n, w in gaps if w < share * n]
        out.append((core["seconds"], np.array(rows, dtype=float).reshape(-1, 2)))
    return out


def overlaid(stops: np.ndarray, window: float, times: int, rng: np.random.Generator) -> np.ndarray:
    """``stops`` overlaid ``times`` times at uniform offsets (rule above): merged intervals
    (start, end), sorted, inside [0, 2 * window) so a call near the end sees the wrap."""
    copies = [
        stops[:, 0] if i == 0 else (stops[:, 0] + rng.uniform(0, window)) % window
        for i in range(times)
    ]
    starts = np.concatenate(copies)
    lengths = np.tile(stops[:, 1], times)
    order = np.argsort(starts)
    starts, ends = starts[order], starts[order] + lengths[order]
    starts, ends = np.concatenate([starts, starts + window]), np.concatenate([ends, ends + window])
    merged: list[list[float]] = []
    for s, e in zip(starts, ends, strict=True):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return np.array(merged, dtype=float).reshape(-1, 2)


def delays(
    intervals: np.ndarray, window: float, call_s: float, n: int, rng: np.random.Generator
) -> np.ndarray:
    """The delay (s) of ``n`` calls of ``call_s`` started uniformly in [0, window)."""
    out = np.zeros(n)
    if len(intervals) == 0:
        return out
    starts = rng.uniform(0, window, n)
    first = np.searchsorted(intervals[:, 1], starts, side="right")
    for i, (t, j) in enumerate(zip(starts, first, strict=True)):
        need, now = call_s, t
        while j < len(intervals):
            s, e = intervals[j]
            if s > now + need:
                break
            if s > now:
                need -= s - now
            now = e
            j += 1
        out[i] = now + need - t - call_s
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--calls-ms", default="1,2,5", help="call lengths, ms (default 1,2,5)")
    ap.add_argument("--times", default="1,10,20", help="how many times as often (default 1,10,20)")
    ap.add_argument("--calls", type=int, default=200_000, help="calls per core and setting")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    try:
        calls_ms = [float(x) for x in args.calls_ms.split(",")]
        times = [int(x) for x in args.times.split(",")]
    except ValueError as e:
        print(
            f"effect.py: --calls-ms and --times want numbers separated by commas ({e})",
            file=sys.stderr,
        )
        return 2
    if min(calls_ms) <= 0 or min(times) < 1 or args.calls < 100:
        print(
            "effect.py: call lengths must be positive, --times at least 1, --calls at least 100",
            file=sys.stderr,
        )
        return 2
    print("| file | core | k | stolen | call ms | delayed | delay p99 ms | delay p99.9 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for path in args.files:
        for core, (window, stops) in enumerate(stops_of(path)):
            for k in times:
                rng = np.random.default_rng(args.seed)
                intervals = overlaid(stops, window, k, rng)
                inside = intervals[intervals[:, 0] < window]
                stolen = float(np.sum(np.minimum(inside[:, 1], window) - inside[:, 0])) / window
                for d in calls_ms:
                    x = delays(intervals, window, d / 1e3, args.calls, rng) * 1e3
                    p99, p999 = np.quantile(x, [0.99, 0.999])
                    late = np.mean(x > 1e-6)
                    print(
                        f"| {path.name} | {core} | {k} | {stolen:.4f} | {d:g} | {late:.4f} "
                        f"| {p99:.2f} | {p999:.2f} |"
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
