#!/bin/sh
# The thirty-first round's lab grid, from the repository root, under the lab lock: round 29's
# experiment on arrival seed 201, request traces kept in /tmp/r31/grid-seed201; committed copy:
# run files, plan, summary, timelines.json (no traces).
set -e
P=$PWD/.venv/bin/python; D=docs/results/calibration/round31
export PATH=$PWD/.venv/bin:$PATH
mkdir -p /tmp/r31
date -u > /tmp/r31/lab.times
lanes bench run $D/experiment-seed201.toml --out /tmp/r31/grid-seed201
(cd bench/calibrate && $P timelines.py /tmp/r31/grid-seed201)
date -u >> /tmp/r31/lab.times
G=/tmp/r31/grid-seed201; K=$D/grid-seed201
for v in fifo sjf independent default; do mkdir -p $K/runs/$v; cp $G/runs/$v/L*-r?.json $K/runs/$v/; done
cp $G/plan.json $G/summary.json $G/timelines.json $K/
