#!/bin/sh
# After run.sh (from the repository root): host_moved.py's verdict for the committed
# cpu-2core.toml (round 27's reading of grid 157) on each light grid, on the first two together
# (the check as a user runs it, before the truth) and on each full grid's lowest level; the
# committed file on the full grids (seeds 193, 197), scaled to the hour against grid 157, grid by
# grid and pooled; the lab's own, grid on grid both ways; the hour's speed.
set -e
ROOT=$PWD; P=$ROOT/.venv/bin/python; D=$ROOT/docs/results/calibration/round29; O=$D/out
R=$ROOT/docs/results/calibration
C=$R/round27/scenarios/seed157-reading.toml; REF=$R/round27/grid-seed157
A=$D/grid-seed193; B=$D/grid-seed197
mkdir -p $O
cd bench/calibrate
export PYTHONPATH=.
for g in light1 light2 light3 grid-seed193 grid-seed197; do
  $P host_moved.py $D/$g --markdown $O/moved-on-$g.md > /dev/null || true
done
$P host_moved.py $D/light1 $D/light2 --markdown $O/moved-on-light12.md > /dev/null || true
for g in $A $B; do
  $P against_demo.py $g --grid --scenario $C --windows 100 --hour-speed $REF \
    --markdown $O/committed-hour-on-$(basename $g).md > /dev/null
done
$P against_demo.py $A $B --grid --scenario $C --windows 100 --hour-speed $REF --markdown $O/committed-hour-pooled.md > /dev/null
$P self_check.py $A --predicts $B --markdown $O/lab-193-on-197.md > /dev/null
$P self_check.py $B --predicts $A --markdown $O/lab-197-on-193.md > /dev/null
$P hour_speed.py $A $B --reference $REF > $O/hour-speed.txt
$P $R/round22/count.py $O/committed-*.md $O/lab-*.md > $O/counts.txt
head -qn1 $O/moved-*.md >> $O/counts.txt
date -u
