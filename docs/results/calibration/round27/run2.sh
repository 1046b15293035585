#!/bin/sh
# The twenty-seventh round's second pair of grids, from the repository root (2026-12-02), under
# the lab lock, after cpu-2core.toml was committed as the reading of grid 157: two fresh arrival
# seeds (167, 173) back to back, 60 runs each, then timelines.py on each, to judge the committed
# file on an hour it was read before.
set -e
P=$PWD/.venv/bin/python; D=docs/results/calibration/round27
export PATH=$PWD/.venv/bin:$PATH
mkdir -p /tmp/r27
date -u > /tmp/r27/run2.times
for seed in 167 173; do
  lanes bench run $D/experiment-seed$seed.toml --out /tmp/r27/grid-seed$seed
  date -u >> /tmp/r27/run2.times
  (cd bench/calibrate && $P timelines.py /tmp/r27/grid-seed$seed)
done
# the committed copies (run files, plan, summary, timelines.json; no request traces)
for seed in 167 173; do
  G=/tmp/r27/grid-seed$seed; K=$D/grid-seed$seed
  for v in fifo sjf independent default; do mkdir -p $K/runs/$v; cp $G/runs/$v/L*-r?.json $K/runs/$v/; done
  cp $G/plan.json $G/summary.json $G/timelines.json $K/
done
date -u >> /tmp/r27/run2.times
