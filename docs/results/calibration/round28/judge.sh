#!/bin/sh
# After run.sh (from the repository root): the committed cpu-2core.toml (round 27's reading of
# grid 157) and the file of 2026-11-29 on round 28's grids (seeds 179, 181), each scaled to the
# hour against the grid it was read off, grid by grid and pooled; the lab's own, grid on grid
# both ways; and host_moved.py's verdict for each file on each grid's lowest level.
set -e
ROOT=$PWD; P=$ROOT/.venv/bin/python; D=$ROOT/docs/results/calibration/round28; O=$D/out
R=$ROOT/docs/results/calibration
A=$D/grid-seed179; B=$D/grid-seed181
mkdir -p $O
cd bench/calibrate
export PYTHONPATH=.
for pair in "new $R/round27/scenarios/seed157-reading.toml $R/round27/grid-seed157" \
            "old $R/round26/scenarios/committed.toml $R/round21/grid-seed1"; do
  set -- $pair
  for g in $A $B; do
    $P against_demo.py $g --grid --scenario $2 --windows 100 --hour-speed $3 \
      --markdown $O/$1-hour-on-$(basename $g).md > /dev/null
    $P host_moved.py $g --scenario $2 --reference $3 --markdown $O/moved-$1-on-$(basename $g).md \
      > /dev/null || true
  done
  $P against_demo.py $A $B --grid --scenario $2 --windows 100 --hour-speed $3 --markdown $O/$1-hour-pooled.md > /dev/null
done
$P self_check.py $A --predicts $B --markdown $O/lab-179-on-181.md > /dev/null
$P self_check.py $B --predicts $A --markdown $O/lab-181-on-179.md > /dev/null
$P hour_speed.py $A $B --reference $R/round27/grid-seed157 > $O/hour-speed.txt
$P $R/round22/count.py $O/*-hour-*.md $O/lab-*.md > $O/counts.txt
head -1 $O/moved-*.md >> $O/counts.txt
date -u
