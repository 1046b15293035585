#!/bin/sh
# The twenty-eighth round's grids, from the repository root (2026-12-02), under the lab lock: two
# fresh arrival seeds (179, 181) back to back, 60 runs each, then timelines.py on each, to ask
# whether the host has kept the state cpu-2core.toml was read in (round 27's seed-157 grid).
set -e
P=$PWD/.venv/bin/python; D=docs/results/calibration/round28
export PATH=$PWD/.venv/bin:$PATH
mkdir -p /tmp/r28
date -u > /tmp/r28/run.times
for seed in 179 181; do
  lanes bench run $D/experiment-seed$seed.toml --out /tmp/r28/grid-seed$seed
  date -u >> /tmp/r28/run.times
  (cd bench/calibrate && $P timelines.py /tmp/r28/grid-seed$seed)
done
# the committed copies (run files, plan, summary, timelines.json; no request traces)
for seed in 179 181; do
  G=/tmp/r28/grid-seed$seed; K=$D/grid-seed$seed
  for v in fifo sjf independent default; do mkdir -p $K/runs/$v; cp $G/runs/$v/L*-r?.json $K/runs/$v/; done
  cp $G/plan.json $G/summary.json $G/timelines.json $K/
done
date -u >> /tmp/r28/run.times
