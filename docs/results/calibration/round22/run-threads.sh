#!/bin/sh
# After run.sh, under the lab lock (2026-11-29): threads.py at 600 req/s and sched.py at 200 and
# 600 req/s (fifo, sjf) on the seed-23 grid's corpus, for the same-hour reading (read.sh).
set -e
P=$PWD/.venv/bin/python
export PATH=$PWD/.venv/bin:$PATH
mkdir -p /tmp/r22/threads /tmp/r22/sched
cd bench/calibrate
$P threads.py /tmp/r22/grid-seed23/corpus 600 > /tmp/r22/threads/600.md
$P sched.py /tmp/r22/grid-seed23/corpus --policy fifo --rates 200,600 --out /tmp/r22/sched/fifo.json > /dev/null
$P sched.py /tmp/r22/grid-seed23/corpus --policy sjf --rates 200,600 --out /tmp/r22/sched/sjf.json > /dev/null
date -u >> /tmp/r22/run.times
