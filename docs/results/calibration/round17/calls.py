"""Which runtime calls wait for a core (the seventeenth round, docs/results/calibration.md):
per variant, offered rate and model, the calls' mean CPU time, their mean time off a core,
that time per ms of their CPU and its p99, each the mean over repeats of the run's figure, from the
``calls`` block bench/calibrate/timelines.py writes (the slices' ``cpu_ms``); and per variant
and rate the same over all models (each run's calls pooled, weighted by their CPU).

Run: python docs/results/calibration/round17/calls.py /tmp/r17/grid > .../out/calls.md
(after: python bench/calibrate/timelines.py /tmp/r17/grid)
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

MODELS = ("char_cnn", "line_rnn_en", "line_rnn_zh")


def main(folder: Path) -> None:
    timelines = json.loads((folder / "timelines.json").read_text())
    plan = {r["id"]: r for r in json.loads((folder / "plan.json").read_text())["runs"]}
    levels = json.loads((folder / "summary.json").read_text())
    some = next(iter(levels["variants"].values()))["levels"]
    rate = {lv["level"]: lv["offered_rps"] for lv in some}
    rows: dict[tuple[str, float, str], list[tuple[float, float, float, float]]] = defaultdict(list)
    pooled: dict[tuple[str, float], list[float]] = defaultdict(list)
    for run_id, t in timelines.items():
        if run_id not in plan or "calls" not in t:
            continue
        key = (plan[run_id]["variant"], rate[plan[run_id]["level"]])
        cpu = off = 0.0
        for model, c in t["calls"].items():
            rows[(*key, model)].append(
                (c["cpu_ms"], c["off_ms"], c["off_per_cpu"] or 0.0, c["off_p99_ms"])
            )
            cpu += c["cpu_ms"] * c["calls"]
            off += c["off_ms"] * c["calls"]
        pooled[key].append(off / cpu if cpu else 0.0)
    print(
        "| variant | req/s | all calls: off per ms CPU | "
        + " | ".join(f"{m}: CPU ms / off ms / off per ms / off p99 ms" for m in MODELS)
        + " |"
    )
    print("|---|---:|---:|" + "---|" * len(MODELS))
    for variant, r in sorted(pooled):
        cells = []
        for m in MODELS:
            xs = rows.get((variant, r, m), [])
            if not xs:
                cells.append("")
                continue
            mean = [statistics.fmean(x[i] for x in xs) for i in range(4)]
            cells.append(f"{mean[0]:.2f} / {mean[1]:.2f} / {mean[2]:.2f} / {mean[3]:.1f}")
        print(
            f"| `{variant}` | {r:.0f} | {statistics.fmean(pooled[(variant, r)]):.2f} | "
            + " | ".join(cells)
            + " |"
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
