#!/bin/sh
# The twenty-sixth round's same-hour reading (after run2.sh and run-threads.sh), from the
# repository root (2026-12-02): the seed-149 grid read the way cpu-2core.toml was read off round
# 21's seed-1 grid (round21/read-seeds.sh: the calls' own CPU, the server's CPU fitted,
# preemptions absorbed, wake-ups onto busy cores, the client part deconvolved), then given the
# committed file's measured stretch and speed process (call_stretch = [1.0, 1.25, 1.16, 1.0],
# speed_cv 0.1, speed_ms 250), and set as it is against both grids of the hour: does the model,
# read off this hour, meet it as the lab meets itself?
set -e
ROOT=$PWD; P=$ROOT/.venv/bin/python; D=$ROOT/docs/results/calibration/round26; O=$D/out
A=/tmp/r26/grid-seed149; B=/tmp/r26/grid-seed151; R=/tmp/r26/read
OLD=$ROOT/docs/results/calibration/round20/cpu-2core-2026-11-26.toml
mkdir -p $R/runs $D/scenarios
for f in corpus experiment.toml plan.json summary.json timelines.json; do ln -sfn $A/$f $R/$f; done
for v in fifo sjf independent; do ln -sfn $A/runs/$v $R/runs/$v; done
rm -rf $R/threads $R/sched; cp -r /tmp/r26/threads $R/threads; cp -r /tmp/r26/sched $R/sched
cd $ROOT/bench/calibrate
export PYTHONPATH=.
$P spans.py $R --json /tmp/r26/read-waits.json > /dev/null
$P same_hour.py $R /tmp/r26/read-waits.json --busy-wakes --deconvolved --against $A \
  --scenario $OLD --call-cpu --server-cpu --absorbed --markdown $O/seed149-same-hour.md \
  --write /tmp/r26/seed149-read.toml > /dev/null
sed -e 's/^call_preempt_absorbed = true$/call_preempt_absorbed = true\ncall_stretch = [1.0, 1.25, 1.16, 1.0]\nspeed_cv = 0.1\nspeed_ms = 250.0/' \
  /tmp/r26/seed149-read.toml > $D/scenarios/seed149-reading.toml
grep -q '^speed_cv = 0.1$' $D/scenarios/seed149-reading.toml
for g in $A $B; do
  $P against_demo.py $g --grid --scenario $D/scenarios/seed149-reading.toml --windows 100 \
    --markdown $O/seed149-reading-on-$(basename $g).md > /dev/null
done
$P against_demo.py $A $B --grid --scenario $D/scenarios/seed149-reading.toml --windows 100 \
  --markdown $O/seed149-reading-r26b-pooled.md > /dev/null
$P $ROOT/docs/results/calibration/round22/count.py $O/seed149-reading-*.md > $O/counts-seed149-reading.txt
# that reading on every grid of rounds 22-26, against grid 149 as its hour's reference, and the
# default question on it
cd $ROOT && sh $D/judge.sh seed149-reading $D/grid-seed149 && cd bench/calibrate
$P default_question.py --scenario $D/scenarios/seed149-reading.toml --markdown $O/default-question-seed149-reading.md > /dev/null
date -u
