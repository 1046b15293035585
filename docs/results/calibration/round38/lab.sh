#!/bin/sh
# The thirty-eighth round's lab grid, from the repository root, under the lab lock: round 37's
# experiment on arrival seed S (the argument: 221, the default, or 223), request traces kept in
# /tmp/r38/grid-seedS; committed copy:
# run files, plan, summary, timelines.json (no traces).
set -e
S=${1:-221}
P=$PWD/.venv/bin/python; D=docs/results/calibration/round38
export PATH=$PWD/.venv/bin:$PATH
mkdir -p /tmp/r38
date -u >> /tmp/r38/lab.times
lanes bench run $D/experiment-seed$S.toml --out /tmp/r38/grid-seed$S
(cd bench/calibrate && $P timelines.py /tmp/r38/grid-seed$S)
date -u >> /tmp/r38/lab.times
G=/tmp/r38/grid-seed$S; K=$D/grid-seed$S
for v in fifo sjf independent default; do mkdir -p $K/runs/$v; cp $G/runs/$v/L*-r?.json $K/runs/$v/; done
cp $G/plan.json $G/summary.json $G/timelines.json $K/
