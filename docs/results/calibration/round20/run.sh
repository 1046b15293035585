#!/bin/sh
# The twentieth round's grid, from the repository root (2026-11-29), under the lab lock on a quiet
# host, as round19/run.sh: round20/experiment.toml (5 repeats, 120 runs) into /tmp/r20/grid,
# timelines.py, then threads.py at 600 req/s and sched.py at 200 and 600 req/s (fifo, sjf) for the
# same-hour reading (read.sh).
set -e
G=/tmp/r20/grid; P=$PWD/.venv/bin/python
export PATH=$PWD/.venv/bin:$PATH
mkdir -p /tmp/r20/threads /tmp/r20/sched
date -u > /tmp/r20/run.times
lanes bench run docs/results/calibration/round20/experiment.toml --out $G
date -u >> /tmp/r20/run.times
(cd bench/calibrate && $P timelines.py $G)
cd bench/calibrate
$P threads.py $G/corpus 600 > /tmp/r20/threads/600.md
$P sched.py $G/corpus --policy fifo --rates 200,600 --out /tmp/r20/sched/fifo.json > /dev/null
$P sched.py $G/corpus --policy sjf --rates 200,600 --out /tmp/r20/sched/sjf.json > /dev/null
date -u >> /tmp/r20/run.times
