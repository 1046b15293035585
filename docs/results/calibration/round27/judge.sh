#!/bin/sh
# A scenario judged as round 26's judge.sh judges one (from the repository root): pooled per
# round as it is and scaled to the hour, and grid by grid scaled to each grid's hour against
# REFERENCE (default round 21's seed-1 grid, which the file of 2026-11-29 was read off), on the committed
# copies of every grid (run files and timelines.json); counts into out/counts-NAME.txt.
# ROUNDS (default "22 23 24 25 26 26b 27") picks the rounds' grids.
# Run:  [ROUNDS="..."] sh docs/results/calibration/round27/judge.sh SCENARIO NAME [REFERENCE]
set -e
C=$(realpath $1); N=$2
ROOT=$PWD; P=$ROOT/.venv/bin/python; D=$ROOT/docs/results/calibration/round27; O=$D/out
R=$ROOT/docs/results/calibration
REF=$(realpath ${3:-$R/round21/grid-seed1})
R22="$R/round22/grid-seed23 $R/round22/grid-seed37 $R/round22/grid-seed53 $R/round22/grid-seed71 $R/round22/grid-seed89"
R23="$R/round23/grid-seed101 $R/round23/grid-seed103 $R/round23/grid-seed107"
R24="$R/round24/grid-seed109 $R/round24/grid-seed113"
R25="$R/round25/grid-seed127 $R/round25/grid-seed131"
R26="$R/round26/grid-seed137 $R/round26/grid-seed139"
R26b="$R/round26/grid-seed149 $R/round26/grid-seed151"
R27="$R/round27/grid-seed157 $R/round27/grid-seed163"
mkdir -p $O/grids
cd bench/calibrate
export PYTHONPATH=.
ROUNDS=${ROUNDS:-22 23 24 25 26 26b 27}
for r in $ROUNDS; do
  eval G=\$R$r
  $P against_demo.py $G --grid --scenario $C --windows 100 --markdown $O/$N-r$r-pooled.md > /dev/null
  $P against_demo.py $G --grid --scenario $C --windows 100 --hour-speed $REF --markdown $O/$N-hour-r$r-pooled.md > /dev/null
done
ALL=""; for r in $ROUNDS; do eval ALL=\"\$ALL \$R$r\"; done
for g in $ALL; do
  $P against_demo.py $g --grid --scenario $C --windows 100 --hour-speed $REF --markdown $O/grids/$N-hour-on-$(basename $g).md > /dev/null
done
{ $P $R/round22/count.py $O/$N-r*-pooled.md $O/$N-hour-r*-pooled.md; $P $R/round22/count.py $O/grids/$N-hour-on-*.md; } > $O/counts-$N.txt
