"""The host's speed run by run, and what a batch of 8 of ``line_rnn_zh`` cost in that run (the
twenty-first round): per ``fifo`` and ``sjf`` run, replay.py's speed (its calls' CPU against the
grid's mean for the same model and size) and the same over the other models' calls alone, beside
the mean CPU of its batches of 8 of ``line_rnn_zh`` (where it ran 5 or more).

Run from bench/calibrate:
  PYTHONPATH=. python ../../docs/results/calibration/round21/speeds.py GRID
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import replay

MODEL, SIZE = "line_rnn_zh", 8


def main(argv: list[str]) -> int:
    runs = replay.load(Path(argv[0]), ["fifo", "sjf"], None)
    means = replay.mean_cpu(runs)
    print("| run | offered/s | speed | others' speed | batches of 8 | their mean CPU ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for run in sorted(runs, key=lambda r: (r.variant, r.rate, r.id)):
        others = [c / means[(m, n)] for m, n, c in run.calls if (m, n) in means and m != MODEL]
        big = [c for m, n, c in run.calls if m == MODEL and n == SIZE]
        cpu = f"{statistics.fmean(big):.2f}" if len(big) >= 5 else "-"
        print(
            f"| {run.id} | {run.rate:.0f} | {replay.speed(run, means):.3f} | "
            f"{statistics.fmean(others):.3f} | {len(big)} | {cpu} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
