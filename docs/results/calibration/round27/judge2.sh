#!/bin/sh
# After run2.sh (from the repository root): the committed cpu-2core.toml (the reading of grid
# 157) and the file of 2026-11-29 on the second pair's grids (seeds 167, 173), an hour the
# committed file was read before, each scaled to the hour against the grid it was read off; and
# the lab's own, grid on grid both ways.
set -e
ROOT=$PWD; P=$ROOT/.venv/bin/python; D=$ROOT/docs/results/calibration/round27; O=$D/out
R=$ROOT/docs/results/calibration
A=$D/grid-seed167; B=$D/grid-seed173
cd bench/calibrate
export PYTHONPATH=.
for pair in "new $D/scenarios/seed157-reading.toml $D/grid-seed157" \
            "old $R/round26/scenarios/committed.toml $R/round21/grid-seed1"; do
  set -- $pair
  for g in $A $B; do
    $P against_demo.py $g --grid --scenario $2 --windows 100 --hour-speed $3 \
      --markdown $O/r27b-$1-hour-on-$(basename $g).md > /dev/null
  done
  $P against_demo.py $A $B --grid --scenario $2 --windows 100 --hour-speed $3 --markdown $O/r27b-$1-hour-pooled.md > /dev/null
  $P against_demo.py $A $B --grid --scenario $2 --windows 100 --markdown $O/r27b-$1-pooled.md > /dev/null
done
$P self_check.py $A --predicts $B --markdown $O/r27b-lab-167-on-173.md > /dev/null
$P self_check.py $B --predicts $A --markdown $O/r27b-lab-173-on-167.md > /dev/null
$P hour_speed.py $A $B --reference $D/grid-seed157 > $O/r27b-hour-speed.txt
$P $R/round22/count.py $O/r27b-*.md > $O/counts-r27b.txt
date -u
