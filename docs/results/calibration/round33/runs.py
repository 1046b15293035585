"""Run by run, in the order they ran: each run's calls' CPU (median `cpu_ms` of the main call
sizes), its speed probe's work and the rest of the host's cores over its window (the thirty-third
round, docs/results/calibration.md). Reads a traced grid's run files and traces.

Run:  python runs.py GRID [GRID ...]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

CELLS = (("char_cnn", 1), ("line_rnn_en", 1), ("line_rnn_zh", 1), ("line_rnn_zh", 8))
"""The (model, batch size) whose median CPU each row shows."""


def main(argv: list[str]) -> int:
    for grid in argv:
        rows = []
        for trace in Path(grid).glob("runs/*/L*-r*.trace.json"):
            meta = json.loads(trace.with_name(trace.name.replace(".trace", "")).read_text())
            calls: dict[tuple[str, int], list[float]] = {}
            for e in json.loads(trace.read_text())["traceEvents"]:
                if e.get("cat") == "job":
                    a = e["args"]
                    calls.setdefault((a["model"], a["batch_size"]), []).append(a["cpu_ms"])
            cells = [
                f"{statistics.median(calls[c]):6.3f}" if len(calls.get(c, [])) >= 10 else "     -"
                for c in CELLS
            ]
            other = (meta.get("server") or {}).get("other_cores")
            rows.append(
                (
                    meta["started_unix"],
                    meta["variant"],
                    int(meta["offered"]["rate_rps"]),
                    meta["repeat"],
                    cells,
                    meta["speed_probe"]["work_ms"],
                    other,
                )
            )
        rows.sort()
        print(f"{grid}: t s, variant, req/s, repeat, median cpu_ms of {CELLS}, probe ms,")
        print("  the rest of the host's cores")
        for t, v, rps, rep, cells, probe, other in rows:
            o = f"{other:.2f}" if other is not None else "-"
            head = f"{t - rows[0][0]:5.0f} {v:11s} {rps:4d} r{rep}"
            print(f"{head} {' '.join(cells)}  {probe:.3f}  {o}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
