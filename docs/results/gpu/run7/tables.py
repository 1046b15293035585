"""Run 7's table of every run of a lab, in the order the runs started (docs/results/gpu.md).

    python3 docs/results/gpu/run7/tables.py LAB_DIR > runs.md

One row a run file (``runs/VARIANT/*-rN.json``): its offered load, goodput, SLO attainment,
p50 and p99 (overall and per model), the executors' busy share of the window (the mean over
the server's devices), rows a job (requests ÷ the executors' jobs), the server's CPU cores
(its process CPU seconds ÷ the window), the generators' send delay p99 and the 429 replies.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

MODELS = ("char_cnn", "line_rnn_zh", "line_rnn_en")


def row(doc: dict[str, Any], t0: float) -> str:
    """One run's markdown row; ``t0`` is the lab's first start (s since the epoch)."""
    load, server = doc["load"], doc["server"]
    devices, window = server["device"].values(), server["window_s"]
    busy = sum(d["busy_s"] for d in devices) / len(devices)
    jobs = sum(d["jobs"] for d in devices)
    per_model = " / ".join(f"{load['models'][m]['latency_ms']['p99']:.0f}" for m in MODELS)
    cells = [
        f"{doc['started_unix'] - t0:.0f}",
        doc["id"],
        f"{doc['offered']['rate_rps']:,.0f}",
        f"{load['goodput_rps']:,.0f}",
        f"{load['slo_attainment']:.3f}",
        f"{load['latency_ms']['p50']:.1f}",
        f"{load['latency_ms']['p99']:.1f}",
        per_model,
        f"{busy / window:.2f}",
        f"{load['requests'] / max(jobs, 1):.1f}",
        f"{server['process_cpu_s'] / window:.1f}",
        f"{load['send_delay_ms']['p99']:.1f}",
        str(load["status_codes"].get("429", 0)),
    ]
    return "| " + " | ".join(cells) + " |"


def main(lab: Path) -> None:
    docs = [json.loads(p.read_text()) for p in sorted(lab.glob("runs/*/*-r*.json"))]
    docs = [d for d in docs if "load" in d]
    docs.sort(key=lambda d: d["started_unix"])
    print(
        "| start s | run | offered/s | goodput/s | SLO met | p50 ms | p99 ms | p99 per model ms "
        "| executor busy | rows a job | server CPU cores | send delay p99 ms | 429s |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|")
    for d in docs:
        print(row(d, docs[0]["started_unix"]))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
