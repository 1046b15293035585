#!/bin/sh
# The eighteenth round's reading, from the repository root (2026-11-28), under the lab lock after
# run.sh: the scenario read off the same hour (same_hour.py, as round 17's scratch/read.sh) with
# and without the lag among calls (host.lag_among_calls), and the simulated calls' wait per ms of
# cost per model beside the lab's (same_hour.py --calls).
set -e
ROOT=$PWD; D=$ROOT/docs/results/calibration/round18; P="nice $ROOT/.venv/bin/python"
G=/tmp/r18/grid; R=/tmp/r18/read; O=$D/out
mkdir -p $R/runs $O
for f in corpus experiment.toml plan.json summary.json timelines.json; do ln -sfn $G/$f $R/$f; done
for v in fifo sjf independent; do ln -sfn $G/runs/$v $R/runs/$v; done
rm -rf $R/threads $R/sched; cp -r /tmp/r18/threads $R/threads; cp -r /tmp/r18/sched $R/sched
cd $ROOT/bench/calibrate
$P spans.py $R --json /tmp/r18/read-waits.json > /tmp/r18/spans.md
S="$P same_hour.py $R /tmp/r18/read-waits.json --busy-wakes --deconvolved --against $G --calls"
$S --no-preempt --wall-time --markdown $O/wall.md > /dev/null
$S --markdown $O/threads.md > /dev/null
for lag in 0.5 1 2; do
  $S --no-preempt --wall-time --lag $lag --among-calls --markdown $O/wall-among-$lag.md > /dev/null
done
$S --lag 1 --among-calls --markdown $O/threads-among-1.md > /dev/null
date -u
# added after the first pass (22:02 UTC): the lag among calls with per-thread CPU costs at 0.5 and 2 ms
cd $ROOT/bench/calibrate
for lag in 0.5 2; do
  $S --lag $lag --among-calls --markdown $O/threads-among-$lag.md > /dev/null
done
date -u
# and per-thread CPU without preemptions (22:05 UTC), with and without the lag among calls
for lag in 0 1; do
  if [ $lag = 0 ]; then L=""; N=threads-nopreempt; else L="--lag $lag --among-calls"; N=threads-nopreempt-among-$lag; fi
  $S --no-preempt $L --markdown $O/$N.md > /dev/null
done
date -u
# the lab against itself and the readings by round 16's two yardsticks (22:27 UTC)
$P self_check.py $G --markdown $O/self-check.md > /dev/null
PYTHONPATH=. $P $ROOT/docs/results/calibration/round16/noise.py $G $O/threads.md \
  $O/threads-among-0.5.md $O/threads-among-1.md $O/threads-among-2.md $O/threads-nopreempt.md \
  $O/threads-nopreempt-among-1.md $O/wall.md $O/wall-among-0.5.md $O/wall-among-1.md \
  $O/wall-among-2.md > $O/noise.txt
# longer lags among calls (22:25 UTC), after round 17's by-length peak at 3-4 ms calls
for lag in 3 4 6; do
  $S --lag $lag --among-calls --markdown $O/threads-among-$lag.md > /dev/null
  $S --no-preempt --wall-time --lag $lag --among-calls --markdown $O/wall-among-$lag.md > /dev/null
done
