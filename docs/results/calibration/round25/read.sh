#!/bin/sh
# The twenty-fifth round's readings, from the repository root (2026-12-01), after run.sh: each
# run replayed with its own arrivals and speed (replay.py; the speed against the grid's calls and
# against the scenario's, bins of 250 ms over time: host.speed_series, new), the series summed up
# (series.py) and what each form explains (explained.py); the lab against itself across the two
# grids; the committed scenario scaled to the hour's speed (hour.py: the calls' CPU at the
# lightest levels against the scenario's, 1.18) with and without a speed process read off the
# series, pooled and grid by grid, as 100 windows per level; the speed process alone on the ten
# grids of rounds 22-24 (their committed copies).
set -e
ROOT=$PWD; P=$ROOT/.venv/bin/python; D=$ROOT/docs/results/calibration/round25; O=$D/out
# cpu-2core.toml as committed when these ran (before this round added its speed process)
C=$D/scenarios/cpu-2core-before.toml; S=$D/scenarios
G="/tmp/r25/grid-seed127 /tmp/r25/grid-seed131"
mkdir -p $O $S
$P $D/hour.py $C 1.18 $S/hour-1.18.toml
for p in 0.08-250 0.1-250 0.1-500; do
  $P $D/hour.py $C 1.18 $S/hour-1.18-speed-$p.toml $(echo $p | tr - ' ').0
done
for p in 0.1-250 0.1-500; do $P $D/hour.py $C 1.0 $S/speed-$p.toml $(echo $p | tr - ' ').0; done
cd bench/calibrate
G="/tmp/r25/grid-seed127 /tmp/r25/grid-seed131"
for s in 127 131; do
  for base in grid scenario; do
    $P replay.py /tmp/r25/grid-seed$s --scenario $C --variants fifo,sjf,independent,default \
      --seeds 3 --speed-base $base --markdown $O/replay-seed$s-base-$base.md > /dev/null
  done
done
$P $D/explained.py $O/replay-seed127-base-grid.md $O/replay-seed131-base-grid.md > $O/explained-base-grid.md
$P $D/explained.py $O/replay-seed127-base-scenario.md $O/replay-seed131-base-scenario.md > $O/explained-base-scenario.md
$P $D/series.py $C $G > $O/series.md
$P $D/probe_series.py $C $G > $O/probe-series.md
$P self_check.py /tmp/r25/grid-seed127 --predicts /tmp/r25/grid-seed131 --markdown $O/lab-127-on-131.md > /dev/null
$P self_check.py /tmp/r25/grid-seed131 --predicts /tmp/r25/grid-seed127 --markdown $O/lab-131-on-127.md > /dev/null
for sc in $C $S/hour-*.toml; do
  n=$(basename $sc .toml)
  $P against_demo.py $G --grid --scenario $sc --windows 100 --markdown $O/$n-pooled-windows.md > /dev/null
  for s in 127 131; do
    $P against_demo.py /tmp/r25/grid-seed$s --grid --scenario $sc --windows 100 --markdown $O/$n-on-seed$s-windows.md > /dev/null
  done
done
R=$ROOT/docs/results/calibration
OLD="$R/round22/grid-seed23 $R/round22/grid-seed37 $R/round22/grid-seed53 $R/round22/grid-seed71 $R/round22/grid-seed89 $R/round23/grid-seed101 $R/round23/grid-seed103 $R/round23/grid-seed107 $R/round24/grid-seed109 $R/round24/grid-seed113"
for sc in $C $S/speed-*.toml; do
  n=$(basename $sc .toml)
  $P against_demo.py $OLD --grid --scenario $sc --windows 100 --markdown $O/$n-on-r22-24-pooled-windows.md > /dev/null
done
$P $R/round22/count.py $O/*-windows.md $O/lab-*.md > $O/counts.txt
# grid by grid on all twelve grids of rounds 22-25, as it is and scaled to each grid's hour
# (against_demo.py --hour-speed against round 21's seed-1 grid, which the scenario was read off;
# at the lightest level, and at every level)
REF=$R/round21/grid-seed1; mkdir -p $O/grids
for g in $OLD /tmp/r25/grid-seed127 /tmp/r25/grid-seed131; do
  b=$(basename $g)
  for sc in $C $S/speed-0.1-250.toml $S/speed-0.1-500.toml; do
    n=$(basename $sc .toml)
    $P against_demo.py $g --grid --scenario $sc --windows 100 --markdown $O/grids/$n-on-$b-windows.md > /dev/null
  done
  for sc in $C $S/speed-0.1-250.toml; do
    n=$(basename $sc .toml)
    $P against_demo.py $g --grid --scenario $sc --windows 100 --hour-speed $REF --markdown $O/grids/$n-hour-on-$b-windows.md > /dev/null
    $P against_demo.py $g --grid --scenario $sc --windows 100 --hour-speed $REF --hour-levels all --markdown $O/grids/$n-hourall-on-$b-windows.md > /dev/null
  done
done
$P hour_speed.py $OLD /tmp/r25/grid-seed127 /tmp/r25/grid-seed131 --reference $REF > $O/hour-speeds.txt
$P hour_speed.py $OLD /tmp/r25/grid-seed127 /tmp/r25/grid-seed131 --reference $REF --levels all > $O/hour-speeds-all.txt
for n in cpu-2core-before speed-0.1-250 speed-0.1-500 cpu-2core-before-hour speed-0.1-250-hour cpu-2core-before-hourall speed-0.1-250-hourall; do
  echo "$n:"; $P $R/round22/count.py $O/grids/$n-on-*.md
done > $O/counts-grids.txt
# the default question on the scenario with the speed process
$P default_question.py --scenario $S/speed-0.1-250.toml --markdown $O/default-question-speed-0.1-250.md > /dev/null
# and on cpu-2core.toml as committed after this round (the same figures, the file's own header)
$P default_question.py --markdown $D/default-question.md > /dev/null
date -u
