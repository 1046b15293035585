#!/bin/sh
# After lab.sh 203 and lab.sh 205, under the lab lock, from the repository root: threads.py at
# 600 req/s and sched.py at 200 and 600 req/s (fifo, sjf) on the seed-203 grid's corpus, for a
# same-hour reading (read.sh), as round 26's run-threads.sh did.
set -e
P=$PWD/.venv/bin/python
export PATH=$PWD/.venv/bin:$PATH
mkdir -p /tmp/r33/threads /tmp/r33/sched
cd bench/calibrate
$P threads.py /tmp/r33/grid-seed203/corpus 600 > /tmp/r33/threads/600.md
$P sched.py /tmp/r33/grid-seed203/corpus --policy fifo --rates 200,600 --out /tmp/r33/sched/fifo.json > /dev/null
$P sched.py /tmp/r33/grid-seed203/corpus --policy sjf --rates 200,600 --out /tmp/r33/sched/sjf.json > /dev/null
date -u >> /tmp/r33/lab.times
