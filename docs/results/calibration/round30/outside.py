"""How much of a short model's measured p99 is outside the server? The thirtieth round's check,
on grids kept with their request traces (round 29's, in /tmp/r29).

For each run of ``fifo`` and ``sjf`` at 600 and 800 req/s: each model's measured p99 (the load
generator's, from the intended send) beside the p99 of its requests' time inside the server
(the request spans' ``total_ms``), and their ratio; and the run's send delay p99.

Run:  python docs/results/calibration/round30/outside.py GRID [GRID ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

MODELS = ("char_cnn", "line_rnn_en")


def main(grids: list[str]) -> int:
    head = " | ".join(f"{m} measured / inside p99 ms (ratio)" for m in MODELS)
    print(f"| run | {head} | send delay p99 ms |")
    print("|---|" + "---:|" * (len(MODELS) + 1))
    for g in grids:
        for level in ("L2", "L3"):
            for variant in ("fifo", "sjf"):
                for path in sorted((Path(g) / "runs" / variant).glob(f"{level}-r?.json")):
                    run = json.loads(path.read_text())
                    trace = json.loads(path.with_name(path.stem + ".trace.json").read_text())
                    cells = []
                    for m in MODELS:
                        inside = np.quantile(
                            [
                                e["args"]["total_ms"]
                                for e in trace["traceEvents"]
                                if e.get("cat") == "request"
                                and e.get("ph") == "b"
                                and e.get("name") == m
                                and "args" in e
                            ],
                            0.99,
                        )
                        measured = run["load"]["models"][m]["latency_ms"]["p99"]
                        cells.append(f"{measured:.1f} / {inside:.1f} ({measured / inside:.2f})")
                    delay = run["load"]["send_delay_ms"]["p99"]
                    print(
                        f"| {Path(g).name} {run['id']} | " + " | ".join(cells) + f" | {delay:.1f} |"
                    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
