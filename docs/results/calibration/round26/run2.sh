#!/bin/sh
# The twenty-sixth round's second pair of grids, from the repository root (2026-12-02), under the
# lab lock: two fresh arrival seeds (149, 151), an hour after the first pair, back to back, 60
# runs each (round26/experiment-seed*.toml, round 24's experiment with new seeds: the host speed
# probe per run), then timelines.py on each.
set -e
P=$PWD/.venv/bin/python; D=docs/results/calibration/round26
export PATH=$PWD/.venv/bin:$PATH
mkdir -p /tmp/r26
date -u > /tmp/r26/run2.times
for seed in 149 151; do
  lanes bench run $D/experiment-seed$seed.toml --out /tmp/r26/grid-seed$seed
  date -u >> /tmp/r26/run2.times
  (cd bench/calibrate && $P timelines.py /tmp/r26/grid-seed$seed)
done
date -u >> /tmp/r26/run2.times
# the committed copies (run files, plan, summary, timelines.json; no request traces)
for seed in 149 151; do
  G=/tmp/r26/grid-seed$seed; K=$D/grid-seed$seed
  for v in fifo sjf independent default; do mkdir -p $K/runs/$v; cp $G/runs/$v/L*-r?.json $K/runs/$v/; done
  cp $G/plan.json $G/summary.json $G/timelines.json $K/
done
