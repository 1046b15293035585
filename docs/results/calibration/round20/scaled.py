"""A scenario carried to another hour by a speed reading (the twentieth round): each model's
runtime-call costs (``gpu.mean_ms`` and ``batch_ms``) scaled by how much more CPU its batches of
one took at the lowest level of the grid of that hour than at the lowest level of the grid the
scenario was read off (the median over the ``fifo`` and ``sjf`` runs of each run's median
``cpu_ms``, timelines.json). Nothing else changes, and no latency or goodput figure enters. Writes
the scaled scenario (scenario_file.py) and prints the ratios.

Run from bench/calibrate:
  PYTHONPATH=. python ../../docs/results/calibration/round20/scaled.py SCENARIO FROM TO OUT
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path

import scenario_file

from lanes.sim.scenario import Scenario


def lowest_cpu(grid: Path) -> dict[str, float]:
    """Model → the median over the fifo/sjf runs at the lowest level of their batches of one's
    median ``cpu_ms``."""
    timelines = json.loads((grid / "timelines.json").read_text())
    per: dict[str, list[float]] = {}
    for key, run in timelines.items():
        variant, name = key.split("/")
        if variant not in ("fifo", "sjf") or not name.startswith("L0-"):
            continue
        for model, cells in run["models"].items():
            if "1" in cells and cells["1"].get("cpu_ms") is not None:
                per.setdefault(model, []).append(cells["1"]["cpu_ms"])
    return {m: statistics.median(xs) for m, xs in per.items()}


def main(argv: list[str]) -> int:
    scenario, source, target, out = (Path(a) for a in argv)
    base = Scenario.load(scenario)
    was, now = lowest_cpu(source), lowest_cpu(target)
    services = []
    for s in base.services:
        k = now[s.name] / was[s.name]
        print(f"{s.name}: {was[s.name]:.4f} -> {now[s.name]:.4f} ms, x{k:.3f}")
        gpu = replace(s.gpu, mean_ms=s.gpu.mean_ms * k)
        batching = s.batching
        if batching is not None:
            batching = replace(batching, batch_ms=tuple((n, ms * k) for n, ms in batching.batch_ms))
        services.append(replace(s, gpu=gpu, batching=batching))
    scaled = replace(base, services=tuple(services))
    header = f"{scenario} with its calls' costs scaled from {source}'s lowest level to {target}'s"
    scenario_file.write(out, scaled, header)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
