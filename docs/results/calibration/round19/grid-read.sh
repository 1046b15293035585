#!/bin/sh
# The nineteenth round's new grid read (after run.sh), from the repository root (2026-11-29), under
# the lab lock: the scenario read off the same hour as round18/read.sh does, with round 18's best
# reading and round 19's (the calls' own CPU, the server's CPU fitted, the preemptions absorbed)
# and their parts, then round 16's yardsticks (self_check.py, noise.py) and the runs' windows.
set -e
ROOT=$PWD; D=$ROOT/docs/results/calibration/round19; P="nice $ROOT/.venv/bin/python"
G=/tmp/r19/grid; R=/tmp/r19/read; O=$D/grid-out
mkdir -p $R/runs $O
for f in corpus experiment.toml plan.json summary.json timelines.json; do ln -sfn $G/$f $R/$f; done
for v in fifo sjf independent; do ln -sfn $G/runs/$v $R/runs/$v; done
rm -rf $R/threads $R/sched; cp -r /tmp/r19/threads $R/threads; cp -r /tmp/r19/sched $R/sched
mkdir -p $D/grid; cp $G/plan.json $G/summary.json $G/timelines.json $D/grid/
for v in fifo sjf independent default; do mkdir -p $D/grid/runs/$v; cp $G/runs/$v/L*-r?.json $D/grid/runs/$v/; done
cp -r /tmp/r19/sched $D/grid/sched; cp /tmp/r19/threads/600.md $D/grid/sched/threads-600.md
cd $ROOT/bench/calibrate
$P spans.py $R --json /tmp/r19/read-waits.json > /tmp/r19/spans.md
S="$P same_hour.py $R /tmp/r19/read-waits.json --busy-wakes --deconvolved --against $G --calls"
$S --markdown $O/threads.md > /dev/null
$S --call-cpu --server-cpu --absorbed --markdown $O/cpu-server-absorbed.md > /dev/null
$S --call-cpu --server-cpu --markdown $O/cpu-server.md > /dev/null
$S --call-cpu --absorbed --markdown $O/cpu-absorbed.md > /dev/null
$S --absorbed --markdown $O/absorbed.md > /dev/null
$S --call-cpu --markdown $O/cpu.md > /dev/null
$S --no-preempt --wall-time --markdown $O/wall.md > /dev/null
date -u
$P self_check.py $G --markdown $O/self-check.md > /dev/null
PYTHONPATH=. $P $ROOT/docs/results/calibration/round16/noise.py $G $O/threads.md \
  $O/cpu-server-absorbed.md $O/cpu-server.md $O/cpu-absorbed.md $O/absorbed.md $O/cpu.md \
  $O/wall.md > $O/noise.txt
A="$R /tmp/r19/read-waits.json --busy-wakes --deconvolved --against $G"
PYTHONPATH=. $P $D/per_model.py $G $A --call-cpu --server-cpu --absorbed \
  > $O/per-model-cpu-server-absorbed.md
cd $ROOT
$P $D/windows.py $G > $O/windows.md
date -u
