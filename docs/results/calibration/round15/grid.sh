#!/bin/sh
# The fifteenth round's grid, from the repository root, in the order it ran (2026-11-28):
#  .venv/bin/lanes bench run docs/results/calibration/round15/experiment.toml --out /tmp/r15/grid
#    # 13:30:17-13:47:04 UTC, 120 runs, a quiet host (nothing else ran); then, under the same
#    # lock (13:47-13:49 UTC):
#  (cd bench/calibrate && python threads.py /tmp/r15/grid/corpus 600 > /tmp/r15/threads/600.md \
#    && python sched.py /tmp/r15/grid/corpus --policy fifo --rates 200,600 --out /tmp/r15/sched/fifo.json \
#    && python sched.py /tmp/r15/grid/corpus --policy sjf --rates 200,600 --out /tmp/r15/sched/sjf.json)
# /tmp/r15/read: the grid with runs/ holding fifo, sjf and independent only (symlinks), and
# threads/ and sched/: same_hour.py reads the scenario off those and sets it against all four
# variants (--against), as the fourteenth round did.
set -e
R=/tmp/r15/read; G=/tmp/r15/grid
mkdir -p $R/runs
for f in corpus experiment.toml plan.json summary.json; do ln -sfn $G/$f $R/$f; done
for v in fifo sjf independent; do ln -sfn $G/runs/$v $R/runs/$v; done
cp -r /tmp/r15/threads /tmp/r15/sched $R/
D=../../docs/results/calibration/round15
cd bench/calibrate
P="nice ../../.venv/bin/python"
$P timelines.py $R
$P spans.py $R --json /tmp/r15/read-waits.json > $D/grid-out/grid-spans.md
$P host_speed.py $G --json $D/host-speed-round15-grid.json
S="$P same_hour.py $R /tmp/r15/read-waits.json --busy-wakes --deconvolved --against $G"
$S --markdown $D/grid-out/grid-threads.md > /dev/null
$S --no-preempt --wall-time --markdown $D/grid-out/grid-wall.md > /dev/null
$S --no-preempt --wall-time --call-stretch weighted --markdown $D/grid-out/grid-wall-weighted.md > /dev/null
$S --on-core --markdown $D/grid-out/grid-on-core.md > /dev/null
$S --on-core --call-stretch weighted --markdown $D/grid-out/grid-on-core-weighted.md > /dev/null
$S --on-core --call-stretch weighted --host-speed --markdown $D/grid-out/grid-on-core-weighted-speed.md > /dev/null
# The calls' share on their core read at the knee instead (14:11:30-14:11:41 UTC, under the lock):
#  python threads.py /tmp/r15/grid/corpus 800 > /tmp/r15/threads800/800.md
# /tmp/r15/read800: /tmp/r15/read with threads/ -> /tmp/r15/threads800 (800 req/s alone)
$P same_hour.py /tmp/r15/read800 /tmp/r15/read-waits.json --busy-wakes --deconvolved --against $G \
  --on-core --markdown $D/grid-out/grid-on-core-threads-800.md > /dev/null
