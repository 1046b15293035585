"""Where the slowest requests spend their time (the twenty-second round): per variant, one
model's slowest 2 % at one level over the grids given (request spans in the window), the mean
of each part of the request (lanes serve's span stages: the hops to the device thread and back,
the hook pool's waits, the batch's wait and run) and of their batch size.

Run:  python tail_parts.py LEVEL MODEL GRID [GRID ...]   (LEVEL as in the run files: L0, L1, ...)
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

PARTS = (
    "handoff_ms", "pre_wait_ms", "pre_return_ms", "batch_wait_ms", "run_ms", "post_wait_ms",
    "post_ms", "post_return_ms", "answer_wake_ms",
)  # fmt: skip
VARIANTS = ("fifo", "sjf", "independent", "default")


def spans(grid: Path, variant: str, level: str, model: str) -> list[dict]:
    out = []
    for path in sorted(grid.glob(f"runs/{variant}/{level}-r*.trace.json")):
        trace = json.loads(path.read_text())
        other = trace["otherData"]
        lo, hi = ((t - other["origin_unix_s"]) * 1e6 for t in other["window_unix"])
        out += [
            ev["args"]
            for ev in trace["traceEvents"]
            if ev.get("cat") == "request" and ev.get("ph") == "b" and "args" in ev
            and lo <= ev["ts"] <= hi and ev["args"]["model"] == model
        ]  # fmt: skip
    return out


def main(argv: list[str]) -> int:
    level, model, grids = argv[0], argv[1], [Path(g) for g in argv[2:]]
    print(f"{model} at {level}, the slowest 2 % of its requests: mean ms per part")
    print("| variant | requests | total | batch size | " + " | ".join(p[:-3] for p in PARTS) + " |")
    print("|---|---:|---:|---:|" + "---:|" * len(PARTS))
    for variant in VARIANTS:
        reqs = sorted((r for g in grids for r in spans(g, variant, level, model)),
                      key=lambda r: r["total_ms"])  # fmt: skip
        if not reqs:
            continue
        top = reqs[int(len(reqs) * 0.98) :]
        mean = {k: statistics.fmean(r[k] for r in top) for k in (*PARTS, "total_ms", "batch_size")}
        parts = " | ".join(f"{mean[p]:.2f}" for p in PARTS)
        head = f"| {variant} | {len(reqs)} | {mean['total_ms']:.2f} | {mean['batch_size']:.1f}"
        print(f"{head} | {parts} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
