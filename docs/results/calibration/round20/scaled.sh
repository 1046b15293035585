#!/bin/sh
# The twentieth round's speed reading, from the repository root: the committed cpu-2core.toml (read
# off round 19's grid) with each model's call costs scaled by its batches of one's CPU at the
# lowest level of round 18's and round 20's grids against round 19's (scaled.py), set as it is
# against those grids.
set -e
ROOT=$PWD; D=$ROOT/docs/results/calibration/round20; P="nice $ROOT/.venv/bin/python"
cd $ROOT/bench/calibrate
for g in 18 20; do
  PYTHONPATH=. $P $D/scaled.py $ROOT/examples/scenarios/cpu-2core.toml /tmp/r19/grid /tmp/r$g/grid \
    $D/scenarios/cpu-2core-scaled-to-r$g.toml > $D/out/scaled-to-r$g.txt
  $P against_demo.py /tmp/r$g/grid --grid --scenario $D/scenarios/cpu-2core-scaled-to-r$g.toml \
    --markdown $D/out/scaled-on-r$g.md > /dev/null
  PYTHONPATH=. $P $ROOT/docs/results/calibration/round16/noise.py /tmp/r$g/grid \
    $D/out/scaled-on-r$g.md >> $D/out/scaled-to-r$g.txt
done
