#!/bin/sh
# The twenty-third round's grids, from the repository root (2026-11-29), under the lab lock:
# three fresh arrival seeds (101, 103, 107) back to back, 60 runs each
# (round23/experiment-seed*.toml), with the lab's host noise per run (commit 008de10), then
# timelines.py on each for the same-hour readings.
set -e
P=$PWD/.venv/bin/python; D=docs/results/calibration/round23
export PATH=$PWD/.venv/bin:$PATH
mkdir -p /tmp/r23
date -u > /tmp/r23/run.times
for seed in 101 103 107; do
  lanes bench run $D/experiment-seed$seed.toml --out /tmp/r23/grid-seed$seed
  date -u >> /tmp/r23/run.times
  (cd bench/calibrate && $P timelines.py /tmp/r23/grid-seed$seed)
done
date -u >> /tmp/r23/run.times
