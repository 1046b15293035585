#!/bin/sh
# The twenty-second round's readings (after run.sh and run-threads.sh), from the repository root
# (2026-11-29), under the lab lock:
# - gaps.py on each grid (the listen backlog fixed: no run should lack a model for a second);
# - the seed-23 grid read the same hour (round 19's best reading: the calls' own CPU, the
#   server's CPU fitted, preemptions absorbed) and written as a scenario;
# - that scenario, the committed cpu-2core.toml (round 19's reading, committed until 09:15 UTC) and
#   round 21's seed-1 reading set as they are
#   against each grid and against the three grids pooled (against_demo.py GRID GRID GRID), and
#   the seed-23 reading against the two grids it was not read off, pooled;
# - each repeat's p99 on the three seeds.
set -e
ROOT=$PWD; D=$ROOT/docs/results/calibration/round22; P="nice $ROOT/.venv/bin/python"
R21=$ROOT/docs/results/calibration/round21
A=/tmp/r22/grid-seed23; R=/tmp/r22/read; O=$D/out
mkdir -p $R/runs $O $D/scenarios
for s in 23 37 53; do
  G=/tmp/r22/grid-seed$s; K=$D/grid-seed$s
  $P $R21/gaps.py $G | tail -1 | sed "s/^/seed $s: /" >> $O/gaps.txt
  for v in fifo sjf independent default; do mkdir -p $K/runs/$v; cp $G/runs/$v/L*-r?.json $K/runs/$v/; done
  cp $G/plan.json $G/summary.json $G/timelines.json $K/
done
for f in corpus experiment.toml plan.json summary.json timelines.json; do ln -sfn $A/$f $R/$f; done
for v in fifo sjf independent; do ln -sfn $A/runs/$v $R/runs/$v; done
rm -rf $R/threads $R/sched; cp -r /tmp/r22/threads $R/threads; cp -r /tmp/r22/sched $R/sched
cd $ROOT/bench/calibrate
$P spans.py $R --json /tmp/r22/read-waits.json > /dev/null
$P same_hour.py $R /tmp/r22/read-waits.json --busy-wakes --deconvolved --against $A \
  --scenario $ROOT/docs/results/calibration/round20/cpu-2core-2026-11-26.toml \
  --call-cpu --server-cpu --absorbed --markdown $O/seed23-same-hour.md \
  --write $D/scenarios/seed23-cpu-server-absorbed.toml > /dev/null
G23=/tmp/r22/grid-seed23; G37=/tmp/r22/grid-seed37; G53=/tmp/r22/grid-seed53
for name in seed23-reading committed r21-seed1-reading; do
  case $name in
    seed23-reading) S=$D/scenarios/seed23-cpu-server-absorbed.toml ;;
    committed) S=$ROOT/docs/results/calibration/round20/scenarios/r19-cpu-server-absorbed.toml ;;  # cpu-2core.toml until 09:15 UTC
    r21-seed1-reading) S=$R21/scenarios/seed1-cpu-server-absorbed.toml ;;
  esac
  for s in 23 37 53; do
    $P against_demo.py /tmp/r22/grid-seed$s --grid --scenario $S --markdown $O/$name-on-seed$s.md > /dev/null
  done
  $P against_demo.py $G23 $G37 $G53 --grid --scenario $S --markdown $O/$name-pooled.md > /dev/null
done
$P against_demo.py $G37 $G53 --grid --scenario $D/scenarios/seed23-cpu-server-absorbed.toml \
  --markdown $O/seed23-reading-on-37-53-pooled.md > /dev/null
$P $R21/repeats.py $G23 $G37 > $O/repeats-23-37.md
$P $R21/repeats.py $G37 $G53 > $O/repeats-37-53.md
date -u
