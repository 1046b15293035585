#!/bin/sh
# A scenario of round26/scenarios/ judged as read.sh judges the committed file (from the
# repository root, after read.sh and read2.sh): pooled per round as it is and scaled to the hour,
# grid by grid on all sixteen grids of rounds 22-26 scaled to each grid's hour against REFERENCE
# (default round 21's seed-1 grid, which cpu-2core.toml was read off); counts into
# out/counts-NAME.txt.
# ROUNDS (default "22 23 24 25 26 26b") picks the rounds' grids (26b: the second pair).
# Run:  [ROUNDS="22 23 24 25 26"] sh docs/results/calibration/round26/judge.sh NAME [REFERENCE]
set -e
N=$1
ROOT=$PWD; P=$ROOT/.venv/bin/python; D=$ROOT/docs/results/calibration/round26; O=$D/out
R=$ROOT/docs/results/calibration; C=$D/scenarios/$N.toml
REF=${2:-$R/round21/grid-seed1}
R22="$R/round22/grid-seed23 $R/round22/grid-seed37 $R/round22/grid-seed53 $R/round22/grid-seed71 $R/round22/grid-seed89"
R23="$R/round23/grid-seed101 $R/round23/grid-seed103 $R/round23/grid-seed107"
R24="$R/round24/grid-seed109 $R/round24/grid-seed113"
R25="$R/round25/grid-seed127 $R/round25/grid-seed131"
R26="/tmp/r26/grid-seed137 /tmp/r26/grid-seed139"
R26b="/tmp/r26/grid-seed149 /tmp/r26/grid-seed151"
mkdir -p $O/grids
cd bench/calibrate
export PYTHONPATH=.
ROUNDS=${ROUNDS:-22 23 24 25 26 26b}
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
