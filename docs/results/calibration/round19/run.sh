#!/bin/sh
# The nineteenth round's new grid, from the repository root (2026-11-29), under the lab lock on a
# quiet host, with the fixed runner (the server's window and the device timeline are the
# measurement's): round 18's experiment (levels 200-1000 req/s, 72 runs) into /tmp/r19/grid,
# timelines.py, then threads.py at 600 req/s and sched.py at 200 and 600 req/s (fifo, sjf) for the
# same-hour reading (grid-read.sh), as round18/run.sh.
set -e
G=/tmp/r19/grid; P=$PWD/.venv/bin/python
export PATH=$PWD/.venv/bin:$PATH
mkdir -p /tmp/r19/threads /tmp/r19/sched
date -u > /tmp/r19/run.times
lanes bench run docs/results/calibration/round18/experiment.toml --out $G
date -u >> /tmp/r19/run.times
(cd bench/calibrate && $P timelines.py $G)
cd bench/calibrate
$P threads.py $G/corpus 600 > /tmp/r19/threads/600.md
$P sched.py $G/corpus --policy fifo --rates 200,600 --out /tmp/r19/sched/fifo.json > /dev/null
$P sched.py $G/corpus --policy sjf --rates 200,600 --out /tmp/r19/sched/sjf.json > /dev/null
date -u >> /tmp/r19/run.times
