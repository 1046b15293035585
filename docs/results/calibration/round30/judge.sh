#!/bin/sh
# The thirtieth round's fresh grid judged (part 6), from the repository root, after lab.sh: the
# committed file (since this round) and cv 0.15 (speed-deep) scaled to the grid's hour against
# grid 157, 100 windows a level; the hour's speed; the spells read off the calls' wall time at
# 600 and 800 req/s, lab against simulated (sim_speed.py).
set -e
ROOT=$PWD; P=$ROOT/.venv/bin/python; D=$ROOT/docs/results/calibration/round30; O=$D/out
R=$ROOT/docs/results/calibration; REF=$R/round27/grid-seed157; G=$D/grid-seed199
export PYTHONPATH=$ROOT/bench/calibrate
$P $ROOT/bench/calibrate/hour_speed.py $G --reference $REF > $O/hour-speed-199.txt
for v in seed157-pooled speed-deep; do
  $P $ROOT/bench/calibrate/against_demo.py $G --grid --scenario $D/scenarios/$v.toml \
    --windows 100 --hour-speed $REF --markdown $O/$v-hour-on-grid-seed199.md > /dev/null
done
$P $R/round22/count.py $O/seed157-pooled-hour-on-grid-seed199.md \
  $O/speed-deep-hour-on-grid-seed199.md > $O/counts-199.txt
for lv in "2 600" "3 800"; do
  set -- $lv
  $P $D/sim_speed.py /tmp/r30/grid-seed199 $1 $2 $D/scenarios/seed157-pooled.toml \
    $D/scenarios/speed-deep.toml
done > $O/sim-speed-199.txt
