#!/bin/sh
# The thirty-third round's same-hour reading (after lab.sh 203, lab.sh 205 and run-threads.sh),
# from the repository root: the seed-203 grid (a disturbed hour of this machine, the Intel Xeon VM)
# read the way cpu-2core.toml was read (round 27's read.sh: the calls' own CPU, the server's CPU
# fitted, preemptions absorbed, wake-ups onto busy cores, the client part deconvolved), given the
# committed file's measured stretch and speed process, and set as it is against both grids of the
# hour: does the model, read off this hour on this machine, meet it as the lab meets itself?
# Then the committed file with the hour's host laid on it (round 27's overlay.py), the same way.
set -e
ROOT=$PWD; P=$ROOT/.venv/bin/python; D=$ROOT/docs/results/calibration/round33; O=$D/out
R=$ROOT/docs/results/calibration
A=/tmp/r33/grid-seed203; B=/tmp/r33/grid-seed205; RD=/tmp/r33/read
OLD=$R/round20/cpu-2core-2026-11-26.toml
mkdir -p $RD/runs $D/scenarios $O
for f in corpus experiment.toml plan.json summary.json timelines.json; do ln -sfn $A/$f $RD/$f; done
for v in fifo sjf independent; do ln -sfn $A/runs/$v $RD/runs/$v; done
rm -rf $RD/threads $RD/sched; cp -r /tmp/r33/threads $RD/threads; cp -r /tmp/r33/sched $RD/sched
cd $ROOT/bench/calibrate
export PYTHONPATH=.
$P spans.py $RD --json /tmp/r33/read-waits.json > /dev/null
$P same_hour.py $RD /tmp/r33/read-waits.json --busy-wakes --deconvolved --against $A \
  --scenario $OLD --call-cpu --server-cpu --absorbed --markdown $O/seed203-same-hour.md \
  --write /tmp/r33/seed203-read.toml > /dev/null
sed -e 's/^call_preempt_absorbed = true$/call_preempt_absorbed = true\ncall_stretch = [1.0, 1.25, 1.16, 1.0]\nspeed_cv = 0.1\nspeed_ms = 250.0/' \
  /tmp/r33/seed203-read.toml > $D/scenarios/seed203-reading.toml
grep -q '^speed_cv = 0.1$' $D/scenarios/seed203-reading.toml
# the reading with the lab's 64 connections per load generator (round 32's client_connections)
sed -e 's/^\(name = "[a-z_]*"\)$/\1\nclient_connections = 64/' $D/scenarios/seed203-reading.toml \
  > $D/scenarios/seed203-reading-conn64.toml
test "$(grep -c '^client_connections = 64$' $D/scenarios/seed203-reading-conn64.toml)" = 3
$P $R/round27/overlay.py $ROOT/examples/scenarios/cpu-2core.toml $D/scenarios/seed203-reading.toml \
  --parts host,preempt,server --out $D/scenarios/file-host-203.toml
# the reading as it is; the overlay's calls are the file's, scaled to the hour as the file's are
for s in seed203-reading seed203-reading-conn64 file-host-203; do
  H=""; [ $s = file-host-203 ] && H="--hour-speed $R/round27/grid-seed157"
  for g in $A $B; do
    $P against_demo.py $g --grid --scenario $D/scenarios/$s.toml --windows 100 $H \
      --markdown $O/$s-on-$(basename $g).md > /dev/null
  done
  $P against_demo.py $A $B --grid --scenario $D/scenarios/$s.toml --windows 100 $H \
    --markdown $O/$s-pooled.md > /dev/null
done
# the committed file scaled to the hour, and the lab against itself (one grid as the prediction)
for g in $A $B; do
  $P against_demo.py $g --grid --scenario $ROOT/examples/scenarios/cpu-2core.toml --windows 100 \
    --hour-speed $R/round27/grid-seed157 --markdown $O/file-hour-on-$(basename $g).md > /dev/null
done
$P against_demo.py $A $B --grid --scenario $ROOT/examples/scenarios/cpu-2core.toml --windows 100 \
  --hour-speed $R/round27/grid-seed157 --markdown $O/file-hour-pooled.md > /dev/null
$P self_check.py $A --predicts $B --markdown $O/self-203-predicts-205.md > /dev/null
$P self_check.py $B --predicts $A --markdown $O/self-205-predicts-203.md > /dev/null
(cd $O && $P $R/round22/count.py self-*.md seed203-*.md file-host-203-*.md file-hour-*.md) > $O/counts.txt
date -u
