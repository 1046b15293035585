#!/bin/sh
# After lab.sh 207, under the lab lock, from the repository root: threads.py at
# 600 req/s and sched.py at 200 and 600 req/s (fifo, sjf) on the seed-207 grid's corpus, for a
# same-hour reading (read.sh), as round 33 did.
set -e
P=$PWD/.venv/bin/python
export PATH=$PWD/.venv/bin:$PATH
mkdir -p /tmp/r34/threads /tmp/r34/sched
cd bench/calibrate
$P threads.py /tmp/r34/grid-seed207/corpus 600 > /tmp/r34/threads/600.md
$P sched.py /tmp/r34/grid-seed207/corpus --policy fifo --rates 200,600 --out /tmp/r34/sched/fifo.json > /dev/null
$P sched.py /tmp/r34/grid-seed207/corpus --policy sjf --rates 200,600 --out /tmp/r34/sched/sjf.json > /dev/null
date -u >> /tmp/r34/lab.times
