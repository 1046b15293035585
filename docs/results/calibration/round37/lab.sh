#!/bin/sh
# The thirty-seventh round's lab grid, from the repository root, under the lab lock: round 34's
# experiment on arrival seed S (the argument: 213, the default, or 217), request traces kept in
# /tmp/r37/grid-seedS; committed copy:
# run files, plan, summary, timelines.json (no traces). A later round runs it with its own
# folder and traces' folder: ROUND_DIR=docs/results/calibration/roundN TRACES=/tmp/rN.
set -e
S=${1:-213}
P=$PWD/.venv/bin/python; D=${ROUND_DIR:-docs/results/calibration/round37}; T=${TRACES:-/tmp/r37}
export PATH=$PWD/.venv/bin:$PATH
mkdir -p $T
date -u >> $T/lab.times
lanes bench run $D/experiment-seed$S.toml --out $T/grid-seed$S
(cd bench/calibrate && $P timelines.py $T/grid-seed$S)
date -u >> $T/lab.times
G=$T/grid-seed$S; K=$D/grid-seed$S
for v in fifo sjf independent default; do
  mkdir -p $K/runs/$v
  for f in $G/runs/$v/L*-r*.json; do  # every repeat's run file (round 41: ten), no traces
    case $f in *.trace.json) ;; *) cp $f $K/runs/$v/ ;; esac
  done
done
cp $G/plan.json $G/summary.json $G/timelines.json $K/
