#!/bin/sh
# The twenty-sixth round's second pair (after run2.sh), from the repository root (2026-12-02):
# the committed cpu-2core.toml on grids 149 and 151, as it is and scaled to the hour, pooled and
# grid by grid; the lab against itself across the two; how the runs spread; and how much of the
# host the rest of it took in every grid of rounds 21-26 (others.py).
set -e
ROOT=$PWD; P=$ROOT/.venv/bin/python; D=$ROOT/docs/results/calibration/round26; O=$D/out
R=$ROOT/docs/results/calibration; C=$ROOT/examples/scenarios/cpu-2core.toml
REF=$R/round21/grid-seed1
NEW="/tmp/r26/grid-seed149 /tmp/r26/grid-seed151"
mkdir -p $O/grids
cd bench/calibrate
export PYTHONPATH=.
$P hour_speed.py $NEW --reference $REF > $O/hour-speeds-2.txt
$P self_check.py /tmp/r26/grid-seed149 --predicts /tmp/r26/grid-seed151 --markdown $O/lab-149-on-151.md > /dev/null
$P self_check.py /tmp/r26/grid-seed151 --predicts /tmp/r26/grid-seed149 --markdown $O/lab-151-on-149.md > /dev/null
$P against_demo.py $NEW --grid --scenario $C --windows 100 --markdown $O/committed-r26b-pooled.md > /dev/null
$P against_demo.py $NEW --grid --scenario $C --windows 100 --hour-speed $REF --markdown $O/committed-hour-r26b-pooled.md > /dev/null
for g in $NEW; do
  b=$(basename $g)
  $P against_demo.py $g --grid --scenario $C --windows 100 --markdown $O/grids/committed-on-$b.md > /dev/null
  $P against_demo.py $g --grid --scenario $C --windows 100 --hour-speed $REF --markdown $O/grids/committed-hour-on-$b.md > /dev/null
done
$P $D/run_spread.py $C $NEW --hour-speed $REF > $O/run-spread-hour-r26b.md
$P $R/round22/count.py $O/committed-*.md $O/lab-*.md > $O/counts.txt
for n in committed committed-hour; do echo "$n:"; $P $R/round22/count.py $O/grids/$n-on-*.md; done > $O/counts-grids.txt
$P $D/others.py $REF $R/round22/grid-seed23 $R/round22/grid-seed37 $R/round22/grid-seed53 \
  $R/round22/grid-seed71 $R/round22/grid-seed89 $R/round23/grid-seed101 $R/round23/grid-seed103 \
  $R/round23/grid-seed107 $R/round24/grid-seed109 $R/round24/grid-seed113 $R/round25/grid-seed127 \
  $R/round25/grid-seed131 /tmp/r26/grid-seed137 /tmp/r26/grid-seed139 $NEW > $O/others.md
date -u
