#!/bin/sh
# The thirty-third round's lab grid, from the repository root, under the lab lock: round 31's
# experiment on arrival seed S (the argument: 203, the default, or 205), request traces kept in
# /tmp/r33/grid-seedS; committed copy:
# run files, plan, summary, timelines.json (no traces).
set -e
S=${1:-203}
P=$PWD/.venv/bin/python; D=docs/results/calibration/round33
export PATH=$PWD/.venv/bin:$PATH
mkdir -p /tmp/r33
date -u >> /tmp/r33/lab.times
lanes bench run $D/experiment-seed$S.toml --out /tmp/r33/grid-seed$S
(cd bench/calibrate && $P timelines.py /tmp/r33/grid-seed$S)
date -u >> /tmp/r33/lab.times
G=/tmp/r33/grid-seed$S; K=$D/grid-seed$S
for v in fifo sjf independent default; do mkdir -p $K/runs/$v; cp $G/runs/$v/L*-r?.json $K/runs/$v/; done
cp $G/plan.json $G/summary.json $G/timelines.json $K/
