"""When a model's lane falls behind (the twenty-first round): per run, the instants, s from the
measured window's start, at which its batches of ``LARGE`` or more requests were dispatched, and
over a grid's runs at the given levels their count per 250 ms of the window. A lab grid's
arrivals are drawn from its ``seed`` and the repeat alone (docs/lab.md), so the same instants
recur in every variant and every grid of a repeat.

Run:  python instants.py GRID LEVELS [MODEL]   (LEVELS as L2,L3; MODEL default line_rnn_zh)
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

LARGE = 6


def main(argv: list[str]) -> int:
    grid, levels = Path(argv[0]), argv[1].split(",")
    model = argv[2] if len(argv) > 2 else "line_rnn_zh"
    bins: Counter[int] = Counter()
    for variant in ("fifo", "sjf"):
        for path in sorted((grid / "runs" / variant).glob("L*-r*.trace.json")):
            stem = path.name.removesuffix(".trace.json")
            if stem.split("-")[0] not in levels:
                continue
            trace = json.loads(path.read_text())
            run = json.loads(path.with_name(stem + ".json").read_text())
            window = (run["started_unix"] - trace["otherData"]["origin_unix_s"]) * 1e3
            at = [
                ev["ts"] / 1e3 - window
                for ev in trace["traceEvents"]
                if ev.get("ph") == "X"
                and ev["args"].get("model") == model
                and ev["args"]["batch_size"] >= LARGE
            ]
            bins.update(int(t // 250) for t in at)
            print(f"{variant}/{stem}: " + " ".join(f"{t / 1e3:.2f}" for t in at))
    print("per 250 ms of the window:", [bins.get(i, 0) for i in range(21)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
