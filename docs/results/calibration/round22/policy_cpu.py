"""The calls' CPU by policy (the twenty-second round): per grid, model and level, each
variant's mean CPU per batch of one (timelines.json's ``cpu_mean_ms``, weighted by batches)
over ``fifo``'s in the same grid, and the difference in µs. ``independent`` runs each model on
its own threads, so a core switches models more often and a call finds colder caches; the
simulator has one cost per model for every policy.

Run:  python policy_cpu.py GRID [GRID ...]   (each with timelines.py's timelines.json)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

MODELS = ("char_cnn", "line_rnn_en", "line_rnn_zh")
VARIANTS = ("independent", "default", "sjf")


def mean_cpu(timelines: dict, variant: str, level: int, model: str) -> float:
    """The mean CPU of ``model``'s batches of one over ``variant``'s runs at ``level``."""
    cells = [
        run["models"][model]["1"]
        for key, run in timelines.items()
        if key.startswith(variant + "/") and f"/L{level}-" in key and "1" in run["models"][model]
    ]
    return sum(c["cpu_mean_ms"] * c["batches"] for c in cells) / sum(c["batches"] for c in cells)


def main(argv: list[str]) -> int:
    heads = " | ".join(f"{v} / fifo (µs more)" for v in VARIANTS)
    print(f"| grid | model | level | {heads} |")
    print("|---|---|---:|" + "---:|" * len(VARIANTS))
    for grid in map(Path, argv):
        timelines = json.loads((grid / "timelines.json").read_text())
        levels = sorted({int(k.split("/L")[1].split("-")[0]) for k in timelines})
        for model in MODELS:
            for level in levels:
                fifo = mean_cpu(timelines, "fifo", level, model)
                cpus = [mean_cpu(timelines, v, level, model) for v in VARIANTS]
                cells = " | ".join(f"{c / fifo:.2f} ({(c - fifo) * 1e3:+.0f})" for c in cpus)
                print(f"| {grid.name} | {model} | L{level} | {cells} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
