#!/bin/sh
# The twenty-fourth round's grids, from the repository root (2026-11-29), under the lab lock:
# two fresh arrival seeds (109, 113) back to back, 60 runs each (round24/experiment-seed*.toml,
# round 18's experiment at 200-900 req/s), with the lab's host speed probe per run
# (lanes.lab.speed_probe), then timelines.py on each.
set -e
P=$PWD/.venv/bin/python; D=docs/results/calibration/round24
export PATH=$PWD/.venv/bin:$PATH
mkdir -p /tmp/r24
date -u > /tmp/r24/run.times
for seed in 109 113; do
  lanes bench run $D/experiment-seed$seed.toml --out /tmp/r24/grid-seed$seed
  date -u >> /tmp/r24/run.times
  (cd bench/calibrate && $P timelines.py /tmp/r24/grid-seed$seed)
done
date -u >> /tmp/r24/run.times
