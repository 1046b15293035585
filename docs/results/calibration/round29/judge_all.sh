#!/bin/sh
# A scenario judged on every grid of this host state (rounds 25-29), from the repository root:
# grid by grid and pooled per round (an hour's grids), scaled to each grid's hour against grid 157
# (which the committed file was read off), 100 windows per level. Tables in
# OUT/NAME-hour-r*-pooled.md and OUT/grids/NAME-hour-on-*.md (OUT: round29/out unless given).
# Run:  sh docs/results/calibration/round29/judge_all.sh SCENARIO NAME [OUT]
#       (HOUR_LEVELS=all reads each hour's speed over every level; round 38;
#       KNEE=capacity counts up to the lab's capacity at SLO, round 39)
set -e
S=$(realpath $1); N=$2
ROOT=$PWD; P=$ROOT/.venv/bin/python; D=$ROOT/docs/results/calibration/round29; O=${3:-$D/out}
mkdir -p $O; O=$(realpath $O)
R=$ROOT/docs/results/calibration; REF=$R/round27/grid-seed157
. $D/grids.sh
mkdir -p $O/grids
cd bench/calibrate
export PYTHONPATH=.
for r in 25 26 26b 27 27b 28 28b 29; do
  eval G=\$R$r
  $P against_demo.py $G --grid --scenario $S --windows 100 --hour-speed $REF \
    --hour-levels ${HOUR_LEVELS:-lightest} --knee ${KNEE:-goodput} --markdown $O/$N-hour-r$r-pooled.md > /dev/null
  for g in $G; do
    $P against_demo.py $g --grid --scenario $S --windows 100 --hour-speed $REF \
      --hour-levels ${HOUR_LEVELS:-lightest} --knee ${KNEE:-goodput} --markdown $O/grids/$N-hour-on-$(basename $g).md > /dev/null
  done
done
