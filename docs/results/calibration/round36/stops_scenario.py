"""The judged file with the hypervisor's stops in it (the thirty-sixth round, part 3,
docs/results/calibration.md).

**Rule.** The file judged since round 29 (round27/scenarios/seed157-reading.toml) plus:

- ``stop_ms``: the quantile points of every stop the probe read on this machine (stops.py's
  files, both cores), at :data:`LEVELS`;
- ``stop_run_per_s``: per run, stops per core per second that make the run's steal. Over every
  run of the fifteen grids (round 29's list) a run's steal in cores (``server.steal_cpu_s``
  over its window) divided by the cores and by the mean stop is its rate; the points are its
  quantiles at :data:`LEVELS`;
- ``stops_per_s``: :data:`BASE`, a floor the simulator needs (above 0).

The stops' lengths are this machine's and the steal is the earlier host's: the earlier host's
stops were never read. Nothing else changes; ``busy_cores`` stays (the median run's steal is
0.008 cores of its 0.149).

Run, from the repository root (D=docs/results/calibration/round36):
  PYTHONPATH=bench/calibrate .venv/bin/python $D/stops_scenario.py $D/out/idle-1.json \\
    $D/out/idle-2.json --write $D/scenarios/stops.toml
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import tomlkit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "round29"))
from by_model import GRIDS, SCENARIO  # noqa: E402  (round 29's fifteen grids, the judged file)

LEVELS = (0.0, 0.25, 0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 0.995, 1.0)
BASE = 0.01
"""Stops per core per second in every run, beyond the run's own draw."""


def stop_lengths(files: list[Path]) -> list[float]:
    """Every stop's length, ms, in stops.py's ``--json`` files (both kinds told apart as there)."""
    out = []
    for f in files:
        data = json.loads(f.read_text())
        share = data["stop_wait_share"]
        for gaps in data["gaps"].values():
            out += [n / 1e3 for _, n, w in gaps if w < share * n]
    return out


def run_steal() -> list[float]:
    """Every run's steal on the fifteen grids, cores."""
    out = []
    for grid in GRIDS:
        for f in sorted(grid.glob("runs/*/L*-r*.json")):
            if f.name.endswith(".trace.json"):
                continue
            server = json.loads(f.read_text())["server"]
            out.append(server["steal_cpu_s"] / server["window_s"])
    return out


def points(xs: list[float], digits: int) -> list[list[float]]:
    """Quantile points of ``xs`` at :data:`LEVELS`, rounded, never falling."""
    qs = np.quantile(np.array(xs), LEVELS)
    out: list[list[float]] = []
    for p, v in zip(LEVELS, qs, strict=True):
        v = round(float(v), digits)
        out.append([p, max(v, out[-1][1]) if out else v])
    return out


def write_with_stops(
    lengths: list[float],
    rates: list[float],
    name: str,
    note: str,
    path: Path,
    base: Path = SCENARIO,
) -> dict[str, object]:
    """``base`` (the judged file) with ``stop_ms`` the points of ``lengths``,
    ``stop_run_per_s`` those of ``rates`` and ``stops_per_s`` :data:`BASE`, named ``name``,
    written to ``path`` (a ``.tmp`` beside it, then a rename) under the comment line ``note``;
    returns its host."""
    doc = tomlkit.parse(base.read_text())
    host = doc["host"]
    host["stop_ms"] = points(lengths, 3)
    host["stops_per_s"] = BASE
    host["stop_run_per_s"] = points(rates, 2)
    doc["name"] = name
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(note + tomlkit.dumps(doc))
    tmp.replace(path)
    return dict(host)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("stops", nargs="+", type=Path, help="stops.py --json files")
    ap.add_argument("--write", type=Path, required=True, help="the scenario to write")
    args = ap.parse_args(argv)
    lengths = stop_lengths(args.stops)
    if not lengths:
        print("stops_scenario.py: no stops in those files", file=sys.stderr)
        return 2
    cores = int(tomlkit.parse(SCENARIO.read_text())["host"]["cpu_cores"])
    mean_s = float(np.mean(lengths)) / 1e3
    rates = [steal / cores / mean_s for steal in run_steal()]
    note = (
        f"# The judged file ({SCENARIO.name}) with stops: {len(lengths)} stops read on this "
        f"machine (mean {mean_s * 1e3:.2f} ms), each run's rate from the fifteen grids' steal "
        f"({len(rates)} runs). Written by round36/stops_scenario.py.\n"
    )
    host = write_with_stops(lengths, rates, "cpu-2core-stops", note, args.write)
    print(f"{args.write}: stop_ms {host['stop_ms']}, stop_run_per_s {host['stop_run_per_s']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
