#!/bin/sh
# The seventeenth round's scratch reading (2026-11-28, 20:18-20:22 UTC): the lag between calls
# only (call-lag.patch applied, LANES_SIM_CALL_LAG set), read off round 17's grid; threads.py and
# sched.py first, under the same lock, as round 16's read.sh. Copies in ../out, ../sched-read.
set -e
cd /work/main/bench/calibrate
P="nice ../../.venv/bin/python"
G=/tmp/r17/grid; R=/tmp/r17/read
date -u > /tmp/r17/read.start
mkdir -p /tmp/r17/threads /tmp/r17/rsched $R/runs
$P threads.py $G/corpus 600 > /tmp/r17/threads/600.md
$P sched.py $G/corpus --policy fifo --rates 200,600 --out /tmp/r17/rsched/fifo.json > /dev/null
$P sched.py $G/corpus --policy sjf --rates 200,600 --out /tmp/r17/rsched/sjf.json > /dev/null
for f in corpus experiment.toml plan.json summary.json timelines.json; do ln -sfn $G/$f $R/$f; done
for v in fifo sjf independent; do ln -sfn $G/runs/$v $R/runs/$v; done
rm -rf $R/threads $R/sched; cp -r /tmp/r17/threads $R/threads; cp -r /tmp/r17/rsched $R/sched
$P spans.py $R --json /tmp/r17/read-waits.json > /tmp/r17/spans.md
O=/tmp/r17/out; mkdir -p $O
S="$P same_hour.py $R /tmp/r17/read-waits.json --busy-wakes --deconvolved --against $G"
$S --no-preempt --wall-time --markdown $O/wall.md > /dev/null
$S --markdown $O/threads.md > /dev/null
$S --no-preempt --wall-time --lag 1 --markdown $O/wall-lag-1.md > /dev/null
LANES_SIM_CALL_LAG=1 $S --no-preempt --wall-time --lag 1 --markdown $O/wall-calllag-1.md > /dev/null
LANES_SIM_CALL_LAG=1 $S --no-preempt --wall-time --lag 2 --markdown $O/wall-calllag-2.md > /dev/null
LANES_SIM_CALL_LAG=1 $S --lag 1 --markdown $O/threads-calllag-1.md > /dev/null
date -u >> /tmp/r17/read.start
