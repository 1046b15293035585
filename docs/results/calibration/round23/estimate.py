"""Round 22's grids with the host noise estimated: copies of their run files whose ``server``
carries ``other_cores`` as lanes.lab.host_noise would have given it, as near as the old fields
allow, so that against_demo.py and self_check.py ``--without-disturbed`` can drop the runs a
neighbour disturbed.

Round 22's runs have the host's busy cores (``cpu_busy_per_core``) and the server process's CPU
(``process_cpu_s``) but not the lab's own CPU (the runner and its generators) or the steal. Their
difference is the lab plus the rest of the host, and the lab's part grows with the rate (0.04
cores at 200 req/s to 0.09 at 900 on round 22's grids). **Rule:** a run's estimated
``other_cores`` is its difference minus the median difference of every run at its rate over the
grids given (the lab's part at that rate, with what a quiet host adds), at least 0; the copies
mark it ``other_cores_estimated``.

Run from bench/calibrate, with PYTHONPATH=. (compare.py's ``others_cores`` is the difference):
  python ../../docs/results/calibration/round23/estimate.py OUT GRID [GRID ...]
  (writes OUT/<grid name>/runs/VARIANT/L*-r*.json)
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from compare import others_cores  # the host's busy cores less the server process's


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        sys.exit(__doc__.split("Run from bench/calibrate, with PYTHONPATH=. ")[1].strip())
    out, grids = Path(argv[0]), [Path(g) for g in argv[1:]]
    runs = [
        (g, p, json.loads(p.read_text()))
        for g in grids
        for p in sorted(g.glob("runs/*/L*-r*.json"))
        if not p.name.endswith(".trace.json")
    ]
    if not runs:
        sys.exit(f"estimate: {', '.join(map(str, grids))} hold no run files")
    by_rate: dict[float, list[float]] = {}
    for _, _, run in runs:
        by_rate.setdefault(run["offered"]["rate_rps"], []).append(others_cores(run))
    base = {rate: statistics.median(xs) for rate, xs in by_rate.items()}
    flagged = []
    for grid, path, run in runs:
        cores = max(0.0, others_cores(run) - base[run["offered"]["rate_rps"]])
        run["server"]["other_cores"] = round(cores, 4)
        run["server"]["other_cores_estimated"] = True
        target = out / grid.name / path.relative_to(grid)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(run))
        if cores >= 0.1:
            flagged.append(
                f"{grid.name} {run['id']}: {cores:.2f} cores, p99 "
                f"{run['load']['latency_ms']['p99']:.1f} ms"
            )
    print(
        f"{len(runs)} runs; base per rate (cores): "
        + ", ".join(f"{r:g}: {b:.3f}" for r, b in sorted(base.items()))
    )
    print(f"{len(flagged)} disturbed (>= 0.1 cores):")
    for line in flagged:
        print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
