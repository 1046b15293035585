#!/bin/sh
# The twenty-second round's grids, from the repository root (2026-11-29), under the lab lock on a
# quiet host, with lanes serve's listen backlog of 1,024 (commit 3145a75): three fresh arrival
# seeds (23, 37, 53) back to back, 60 runs each (round22/experiment-seed*.toml), then
# timelines.py on each for the same-hour readings.
set -e
P=$PWD/.venv/bin/python; D=docs/results/calibration/round22
export PATH=$PWD/.venv/bin:$PATH
mkdir -p /tmp/r22
date -u > /tmp/r22/run.times
for seed in 23 37 53; do
  lanes bench run $D/experiment-seed$seed.toml --out /tmp/r22/grid-seed$seed
  date -u >> /tmp/r22/run.times
  (cd bench/calibrate && $P timelines.py /tmp/r22/grid-seed$seed)
done
date -u >> /tmp/r22/run.times
