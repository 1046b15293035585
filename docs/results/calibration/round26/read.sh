#!/bin/sh
# The twenty-sixth round's readings, from the repository root (2026-12-02), after run.sh: the
# committed cpu-2core.toml (round 25's, with its speed process) on this round's two fresh grids,
# as it is and scaled to the hour (against_demo.py --hour-speed), pooled and grid by grid; the
# lab against itself across the two; the same file on all fourteen grids of rounds 22-26 grid by
# grid, and pooled per round, now also counting the figures inside the 95 % CI of the lab's mean;
# how the runs spread against the simulator's windows (run_spread.py), each model's p99
# (per_model.py), the slow spells within runs (spells.py, on the grids with request traces) and
# the calls' CPU by the calls beside them (overlap.py); the hour without its disturbed runs, and
# with its extra busy cores (busy_cores.py); the capped stretch (judge.sh capped).
set -e
ROOT=$PWD; P=$ROOT/.venv/bin/python; D=$ROOT/docs/results/calibration/round26; O=$D/out
R=$ROOT/docs/results/calibration; C=$ROOT/examples/scenarios/cpu-2core.toml
REF=$R/round21/grid-seed1
NEW="/tmp/r26/grid-seed137 /tmp/r26/grid-seed139"
R22="$R/round22/grid-seed23 $R/round22/grid-seed37 $R/round22/grid-seed53 $R/round22/grid-seed71 $R/round22/grid-seed89"
R23="$R/round23/grid-seed101 $R/round23/grid-seed103 $R/round23/grid-seed107"
R24="$R/round24/grid-seed109 $R/round24/grid-seed113"
R25="$R/round25/grid-seed127 $R/round25/grid-seed131"
mkdir -p $O/grids
cd bench/calibrate
export PYTHONPATH=.
$P hour_speed.py $NEW --reference $REF > $O/hour-speeds.txt
$P self_check.py /tmp/r26/grid-seed137 --predicts /tmp/r26/grid-seed139 --markdown $O/lab-137-on-139.md > /dev/null
$P self_check.py /tmp/r26/grid-seed139 --predicts /tmp/r26/grid-seed137 --markdown $O/lab-139-on-137.md > /dev/null
$P against_demo.py $NEW --grid --scenario $C --windows 100 --markdown $O/committed-r26-pooled.md > /dev/null
$P against_demo.py $NEW --grid --scenario $C --windows 100 --hour-speed $REF --markdown $O/committed-hour-r26-pooled.md > /dev/null
for g in $R22 $R23 $R24 $R25 $NEW; do
  b=$(basename $g)
  $P against_demo.py $g --grid --scenario $C --windows 100 --markdown $O/grids/committed-on-$b.md > /dev/null
  $P against_demo.py $g --grid --scenario $C --windows 100 --hour-speed $REF --markdown $O/grids/committed-hour-on-$b.md > /dev/null
done
for r in 22 23 24 25; do
  eval G=\$R$r
  $P against_demo.py $G --grid --scenario $C --windows 100 --markdown $O/committed-r$r-pooled.md > /dev/null
  $P against_demo.py $G --grid --scenario $C --windows 100 --hour-speed $REF --markdown $O/committed-hour-r$r-pooled.md > /dev/null
done
$P $R/round22/count.py $O/committed-*.md $O/lab-*.md > $O/counts.txt
for n in committed committed-hour; do echo "$n:"; $P $R/round22/count.py $O/grids/$n-on-*.md; done > $O/counts-grids.txt
$P $D/run_spread.py $C $R22 $R23 $R24 > $O/run-spread-r22-24.md
$P $D/run_spread.py $C $R25 --hour-speed $REF > $O/run-spread-hour-r25.md
$P $D/run_spread.py $C $NEW --hour-speed $REF > $O/run-spread-hour-r26.md
$P $D/per_model.py $C $R22 $R23 $R24 --rates 400,600,800,900 > $O/per-model-r22-24.md
$P $D/spells.py $C /tmp/r25/grid-seed127 /tmp/r25/grid-seed131 $NEW > $O/spells-r25-26.md
$P $D/overlap.py $NEW > $O/overlap-r26.md
$P against_demo.py $NEW --grid --scenario $C --windows 100 --hour-speed $REF --without-disturbed --markdown $O/committed-hour-r26-pooled-undisturbed.md > /dev/null
$P $D/busy_cores.py > $O/busy-cores.md
$P $R/round22/count.py $O/committed-*.md $O/lab-*.md > $O/counts.txt
# the capped stretch (scenarios/capped.toml: cpu-2core.toml with call_stretch_capped = true),
# judged as above, and how its runs spread
cd $ROOT && ROUNDS="22 23 24 25 26" sh $D/judge.sh capped && cd bench/calibrate
$P $D/run_spread.py $D/scenarios/capped.toml $R22 $R23 $R24 --rates 400,600,800,900 --variants independent,default,fifo > $O/run-spread-capped-r22-24.md
# the stretch by level (round 22's stretch.py) on round 25's traced grids (quiet of neighbours)
$P $R/round22/stretch.py /tmp/r25/grid-seed127 /tmp/r25/grid-seed131 > $O/stretch-by-level-r25.md
# the default question at round 25's slow hour (default_question.py --hour-speed, new)
$P default_question.py --hour-speed $R/round25/grid-seed127 --hour-speed $R/round25/grid-seed131 --markdown $O/default-question-hour-r25.md > /dev/null
date -u
