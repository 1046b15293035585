#!/bin/sh
# The fourteenth round's grid, from the repository root, in the order it ran (2026-11-28):
#  .venv/bin/lanes bench run docs/results/calibration/round14/experiment.toml --out /tmp/r14/grid
#    # 10:45:31-10:59:31 UTC, 100 runs, a quiet host (nothing else ran)
# /tmp/r14/read: /tmp/r14/grid with runs/ holding fifo, sjf and independent only (symlinks to the
# grid's): same_hour.py reads the scenario off those, as the earlier rounds did, and sets it
# against all four variants of the grid (--against).
set -e
D=../../docs/results/calibration/round14
cd bench/calibrate
P="nice ../../.venv/bin/python"
$P timelines.py /tmp/r14/read                                     # -> /tmp/r14/read/timelines.json
$P spans.py /tmp/r14/read --json /tmp/r14/read-waits.json > $D/grid-spans.md
S="$P same_hour.py /tmp/r14/read /tmp/r14/read-waits.json --busy-wakes --deconvolved --against /tmp/r14/grid"
# 1. the calls' wall time, no preemptions (the twelfth round's best reading)
$S --no-preempt --wall-time --markdown $D/grid-wall-none.md > /dev/null
$S --no-preempt --wall-time --call-stretch weighted --markdown $D/grid-wall-weighted.md > /dev/null
$S --no-preempt --wall-time --call-stretch lossy --markdown $D/grid-wall-lossy.md > /dev/null
# 2. the same hour's per-thread CPU and preemptions (11:03:11-11:04:29 UTC, under the lab's lock)
mkdir -p /tmp/r14/read/threads /tmp/r14/read/sched
../../.venv/bin/python threads.py /tmp/r14/grid/corpus 600 > /tmp/r14/read/threads/600.md
../../.venv/bin/python sched.py /tmp/r14/grid/corpus --policy fifo --rates 200,600 --out /tmp/r14/read/sched/fifo.json
../../.venv/bin/python sched.py /tmp/r14/grid/corpus --policy sjf --rates 200,600 --out /tmp/r14/read/sched/sjf.json
# 3. read with them: device costs as per-thread CPU, this grid's preemptions
$S --markdown $D/grid-threads-none.md > /dev/null
$S --call-stretch weighted --markdown $D/grid-threads-weighted.md > /dev/null
$S --call-stretch lossy --markdown $D/grid-threads-lossy.md > /dev/null
# 4. the preemption rate by offered rate (sched.py's at 200 and 600 req/s, linear between)
$S --preempt-by-level --markdown $D/grid-threads-bylevel-none.md > /dev/null
$S --preempt-by-level --call-stretch weighted --markdown $D/grid-threads-bylevel-weighted.md > /dev/null
# the split by level (from each table's rounded means)
python3 $D/split.py $D/grid-wall-*.md $D/grid-threads-*.md
