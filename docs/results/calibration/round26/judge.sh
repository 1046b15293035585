#!/bin/sh
# A scenario of round26/scenarios/ judged as read.sh judges the committed file (from the
# repository root, after read.sh): pooled per round as it is and scaled to the hour, and grid by
# grid on all fourteen grids scaled to each grid's hour; counts into out/counts-NAME.txt.
# Run:  sh docs/results/calibration/round26/judge.sh NAME
set -e
N=$1
ROOT=$PWD; P=$ROOT/.venv/bin/python; D=$ROOT/docs/results/calibration/round26; O=$D/out
R=$ROOT/docs/results/calibration; C=$D/scenarios/$N.toml
REF=$R/round21/grid-seed1
R22="$R/round22/grid-seed23 $R/round22/grid-seed37 $R/round22/grid-seed53 $R/round22/grid-seed71 $R/round22/grid-seed89"
R23="$R/round23/grid-seed101 $R/round23/grid-seed103 $R/round23/grid-seed107"
R24="$R/round24/grid-seed109 $R/round24/grid-seed113"
R25="$R/round25/grid-seed127 $R/round25/grid-seed131"
R26="/tmp/r26/grid-seed137 /tmp/r26/grid-seed139"
mkdir -p $O/grids
cd bench/calibrate
export PYTHONPATH=.
for r in 22 23 24 25 26; do
  eval G=\$R$r
  $P against_demo.py $G --grid --scenario $C --windows 100 --markdown $O/$N-r$r-pooled.md > /dev/null
  $P against_demo.py $G --grid --scenario $C --windows 100 --hour-speed $REF --markdown $O/$N-hour-r$r-pooled.md > /dev/null
done
for g in $R22 $R23 $R24 $R25 $R26; do
  $P against_demo.py $g --grid --scenario $C --windows 100 --hour-speed $REF --markdown $O/grids/$N-hour-on-$(basename $g).md > /dev/null
done
{ $P $R/round22/count.py $O/$N-r*-pooled.md $O/$N-hour-r*-pooled.md; $P $R/round22/count.py $O/grids/$N-hour-on-*.md; } > $O/counts-$N.txt
