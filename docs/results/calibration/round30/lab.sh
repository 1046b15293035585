#!/bin/sh
# The thirtieth round's one lab grid (part 6), from the repository root, under the lab lock:
# round 29's experiment on arrival seed 199, request traces kept in /tmp/r30/grid-seed199;
# committed copy: run files, plan, summary, timelines.json (no traces).
set -e
P=$PWD/.venv/bin/python; D=docs/results/calibration/round30
export PATH=$PWD/.venv/bin:$PATH
date -u > /tmp/r30/lab.times
lanes bench run $D/experiment-seed199.toml --out /tmp/r30/grid-seed199
(cd bench/calibrate && $P timelines.py /tmp/r30/grid-seed199)
date -u >> /tmp/r30/lab.times
G=/tmp/r30/grid-seed199; K=$D/grid-seed199
for v in fifo sjf independent default; do mkdir -p $K/runs/$v; cp $G/runs/$v/L*-r?.json $K/runs/$v/; done
cp $G/plan.json $G/summary.json $G/timelines.json $K/
