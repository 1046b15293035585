"""A runtime call's CPU by what its device did before it (the twentieth round): is a call cheaper
because its model ran last on the device, or because the device ran a call just before it (its
core's caches still warm), whatever the load?

For every ``fifo`` and ``sjf`` run of a grid (its ``runs/VARIANT/L*-r*.trace.json``), each device's
calls in order (a call runs from its slice's end minus its ``measured_ms`` to the slice's end);
for each call of a model and batch size its ``cpu_ms``, grouped by whether the device's previous
call was of the same model and by the gap from that call's end to this call's start. Prints, per
model and size, the median ``cpu_ms`` (and the count) in each group, per offered rate and over
all rates, so that a dependence on the gap can be told from one on the load.

Run:  python docs/results/calibration/round20/warm.py GRID [--models char_cnn] [--size 1]
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from tails import engine_runs  # beside this file

GAPS_MS = (0.05, 0.2, 1.0, 5.0, 20.0)
"""Gap bucket edges, ms: a bucket is (previous edge, edge]; past the last, one bucket more."""


def bucket(gap: float) -> str:
    lo = 0.0
    for edge in GAPS_MS:
        if gap <= edge:
            return f"<= {edge:g}"
        lo = edge
    return f"> {lo:g}"


def calls(events: list[dict[str, Any]]) -> list[tuple[int, float, float, str, int, float]]:
    """(device, start ms, end ms, model, size, cpu_ms) of a trace's every call, by device and
    start."""
    out = []
    for e in events:
        a = e.get("args", {})
        if e.get("ph") != "X" or "cpu_ms" not in a:
            continue
        end = (e["ts"] + e["dur"]) / 1000.0
        out.append(
            (e["tid"], end - a["measured_ms"], end, a["model"], a["batch_size"], a["cpu_ms"])
        )
    return sorted(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("grid", type=Path)
    ap.add_argument("--models", default="char_cnn,line_rnn_en,line_rnn_zh")
    ap.add_argument("--size", type=int, default=1)
    args = ap.parse_args()
    models = args.models.split(",")
    groups: dict[tuple[str, float, bool, str], list[float]] = defaultdict(list)
    for _, run, events in engine_runs(args.grid):
        rate = run["offered"]["rate_rps"]
        prev: dict[int, tuple[float, str]] = {}
        for dev, start, end, model, size, cpu in calls(events):
            last = prev.get(dev)
            prev[dev] = (end, model)
            if last is None or model not in models or size != args.size:
                continue
            gap = start - last[0]
            groups[(model, rate, last[1] == model, bucket(gap))].append(cpu)
    order = [f"<= {e:g}" for e in GAPS_MS] + [f"> {GAPS_MS[-1]:g}"]
    for model in models:
        rates = sorted({k[1] for k in groups if k[0] == model})
        print(
            f"\n{model}, batches of {args.size}: median cpu_ms [calls] by the gap since the "
            "device's last call (ms), same model last / another\n"
        )
        print("| rate | last | " + " | ".join(order) + " |")
        print("|---:|---|" + "---:|" * len(order))
        for rate in [*rates, None]:
            for same in (True, False):
                cells = []
                for b in order:
                    xs = [
                        x
                        for k, v in groups.items()
                        if k[0] == model
                        and k[2] == same
                        and k[3] == b
                        and (rate is None or k[1] == rate)
                        for x in v
                    ]
                    cells.append(f"{statistics.median(xs):.3f} [{len(xs)}]" if len(xs) >= 5 else "")
                label = "all" if rate is None else f"{rate:.0f}"
                print(f"| {label} | {'same' if same else 'other'} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
