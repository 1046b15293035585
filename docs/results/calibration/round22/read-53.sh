#!/bin/sh
# The twenty-second round, part 2 (after read.sh), from the repository root (2026-11-29), under
# the lab lock: the seed-53 grid (08:29-08:37 UTC, the one run next to threads.py's and sched.py's
# runs at 08:37-08:38) read the same hour as read.sh read seed 23's, written as a scenario, and set
# as it is against each grid and against seeds 23 and 37 pooled, and 37 alone.
set -e
ROOT=$PWD; D=$ROOT/docs/results/calibration/round22; P="nice $ROOT/.venv/bin/python"
A=/tmp/r22/grid-seed53; R=/tmp/r22/read53; O=$D/out
mkdir -p $R/runs
for f in corpus experiment.toml plan.json summary.json timelines.json; do ln -sfn $A/$f $R/$f; done
for v in fifo sjf independent; do ln -sfn $A/runs/$v $R/runs/$v; done
rm -rf $R/threads $R/sched; cp -r /tmp/r22/threads $R/threads; cp -r /tmp/r22/sched $R/sched
cd $ROOT/bench/calibrate
$P spans.py $R --json /tmp/r22/read53-waits.json > /dev/null
$P same_hour.py $R /tmp/r22/read53-waits.json --busy-wakes --deconvolved --against $A \
  --scenario $ROOT/docs/results/calibration/round20/cpu-2core-2026-11-26.toml \
  --call-cpu --server-cpu --absorbed --markdown $O/seed53-same-hour.md \
  --write $D/scenarios/seed53-cpu-server-absorbed.toml > /dev/null
S=$D/scenarios/seed53-cpu-server-absorbed.toml
for s in 23 37; do
  $P against_demo.py /tmp/r22/grid-seed$s --grid --scenario $S --markdown $O/seed53-reading-on-seed$s.md > /dev/null
done
$P against_demo.py /tmp/r22/grid-seed23 /tmp/r22/grid-seed37 /tmp/r22/grid-seed53 --grid \
  --scenario $S --markdown $O/seed53-reading-pooled.md > /dev/null
date -u
