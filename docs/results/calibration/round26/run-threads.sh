#!/bin/sh
# After run2.sh, under the lab lock (2026-12-02): threads.py at 600 req/s and sched.py at 200 and
# 600 req/s (fifo, sjf) on the seed-149 grid's corpus, for a same-hour reading (read3.sh), as
# round 22's run-threads.sh did.
set -e
P=$PWD/.venv/bin/python
export PATH=$PWD/.venv/bin:$PATH
mkdir -p /tmp/r26/threads /tmp/r26/sched
cd bench/calibrate
$P threads.py /tmp/r26/grid-seed149/corpus 600 > /tmp/r26/threads/600.md
$P sched.py /tmp/r26/grid-seed149/corpus --policy fifo --rates 200,600 --out /tmp/r26/sched/fifo.json > /dev/null
$P sched.py /tmp/r26/grid-seed149/corpus --policy sjf --rates 200,600 --out /tmp/r26/sched/sjf.json > /dev/null
date -u >> /tmp/r26/run2.times
