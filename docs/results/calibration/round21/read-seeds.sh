#!/bin/sh
# The twenty-first round's two seeds (after run.sh), from the repository root (2026-11-29), under
# the lab lock: the seed-1 grid read the same hour (round 19's best reading: the calls' own CPU,
# the server's CPU fitted, preemptions absorbed) and written as a scenario; that scenario and the
# committed cpu-2core.toml set as they are against both grids; each run replayed with its own
# arrivals; when line_rnn_zh's lane fell behind in each.
set -e
ROOT=$PWD; D=$ROOT/docs/results/calibration/round21; P="nice $ROOT/.venv/bin/python"
A=/tmp/r21/grid-seed1; B=/tmp/r21/grid-seed11; R=/tmp/r21/read; O=$D/out
OLD=$ROOT/docs/results/calibration/round20/cpu-2core-2026-11-26.toml
mkdir -p $R/runs $O $D/scenarios
for f in corpus experiment.toml plan.json summary.json timelines.json; do ln -sfn $A/$f $R/$f; done
for v in fifo sjf independent; do ln -sfn $A/runs/$v $R/runs/$v; done
rm -rf $R/threads $R/sched; cp -r /tmp/r21/threads $R/threads; cp -r /tmp/r21/sched $R/sched
for s in 1 11; do
  G=/tmp/r21/grid-seed$s; K=$D/grid-seed$s
  for v in fifo sjf independent default; do mkdir -p $K/runs/$v; cp $G/runs/$v/L*-r?.json $K/runs/$v/; done
  cp $G/plan.json $G/summary.json $G/timelines.json $K/
done
cd $ROOT/bench/calibrate
$P spans.py $R --json /tmp/r21/read-waits.json > /dev/null
$P same_hour.py $R /tmp/r21/read-waits.json --busy-wakes --deconvolved --against $A \
  --scenario $OLD --call-cpu --server-cpu --absorbed --markdown $O/seed1-same-hour.md \
  --write $D/scenarios/seed1-cpu-server-absorbed.toml > /dev/null
for s in 1 11; do
  G=/tmp/r21/grid-seed$s
  $P against_demo.py $G --grid --scenario $D/scenarios/seed1-cpu-server-absorbed.toml \
    --markdown $O/seed1-reading-on-seed$s.md > /dev/null
  $P against_demo.py $G --grid --scenario $ROOT/examples/scenarios/cpu-2core.toml \
    --markdown $O/committed-on-seed$s.md > /dev/null
  $P replay.py $G --scenario $D/scenarios/seed1-cpu-server-absorbed.toml \
    --variants fifo,sjf,independent,default --rates 400,600,800 --seeds 5 \
    --markdown $O/replay-seed$s.md > /dev/null
  $P $D/instants.py $G L2 > $O/instants-seed$s-600.txt
done
$P $D/repeats.py /tmp/r21/grid-seed1 /tmp/r21/grid-seed11 > $O/repeats-by-seed.md
date -u
