#!/bin/sh
# The sixteenth round's reading, from the repository root (2026-11-28). The grid ran first
# (13 min, a quiet host, nothing else running; then under the same lock threads.py at 600 and
# 800 req/s and sched.py under fifo, sjf and independent at 200 and 600 req/s):
#  lanes bench run docs/results/calibration/round16/experiment.toml --out /tmp/r16/grid
#  (cd bench/calibrate && python threads.py /tmp/r16/grid/corpus 600 > /tmp/r16/threads/600.md \
#    && python threads.py /tmp/r16/grid/corpus 800 > /tmp/r16/threads800/800.md \
#    && python sched.py /tmp/r16/grid/corpus --policy fifo --rates 200,600 --out /tmp/r16/sched/fifo.json \
#    && python sched.py /tmp/r16/grid/corpus --policy sjf --rates 200,600 --out /tmp/r16/sched/sjf.json \
#    && python sched.py /tmp/r16/grid/corpus --policy independent --rates 200,600 \
#         --out /tmp/r16/sched-ind/independent.json)
# /tmp/r16/read: the grid with runs/ holding fifo, sjf and independent only (symlinks), and
# threads/ and sched/: same_hour.py reads the scenario off those and sets it against all four
# variants (--against), as the fourteenth and fifteenth rounds did. The traces are not kept in
# the repository (run files and summaries are, in grid/).
set -e
R=/tmp/r16/read; G=/tmp/r16/grid
mkdir -p $R/runs
for f in corpus experiment.toml plan.json summary.json; do ln -sfn $G/$f $R/$f; done
for v in fifo sjf independent; do ln -sfn $G/runs/$v $R/runs/$v; done
cp -r /tmp/r16/threads /tmp/r16/sched $R/
D=../../docs/results/calibration/round16
cd bench/calibrate
mkdir -p $D/out
P="nice ../../.venv/bin/python"
$P timelines.py $R
$P spans.py $R --json /tmp/r16/read-waits.json > $D/out/spans.md
S="$P same_hour.py $R /tmp/r16/read-waits.json --busy-wakes --deconvolved --against $G"
# the fifteenth round's readings, on this grid
$S --markdown $D/out/threads.md > /dev/null
$S --no-preempt --wall-time --markdown $D/out/wall.md > /dev/null
$S --no-preempt --wall-time --call-stretch weighted --markdown $D/out/wall-weighted.md > /dev/null
$S --on-core --call-stretch weighted --markdown $D/out/on-core-weighted.md > /dev/null
# the lag (host.lag_ms), with per-thread CPU and preemptions, and with wall time
for lag in 1 2 4; do
  $S --lag $lag --markdown $D/out/threads-lag-$lag.md > /dev/null
  $S --no-preempt --wall-time --lag $lag --markdown $D/out/wall-lag-$lag.md > /dev/null
done
