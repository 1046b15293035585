#!/bin/sh
# The eighteenth round's measurements, from the repository root (2026-11-28), under the lab lock on
# a quiet host: the grid (levels 200-1000 req/s, 72 runs, ~11 min), its per-model and by-length
# tables of the calls' time off a core (round 17's scripts), then threads.py at 600 req/s and
# sched.py at 200 and 600 req/s (fifo, sjf) for the same-hour reading (read.sh).
set -e
G=/tmp/r18/grid; D=docs/results/calibration/round18; P=$PWD/.venv/bin/python
export PATH=$PWD/.venv/bin:$PATH
mkdir -p $D/out /tmp/r18/threads /tmp/r18/sched
date -u > /tmp/r18/run.times
lanes bench run $D/experiment.toml --out $G
date -u >> /tmp/r18/run.times
(cd bench/calibrate && $P timelines.py $G)
$P docs/results/calibration/round17/calls.py $G > $D/out/calls.md
$P docs/results/calibration/round17/by_length.py $G > $D/out/by-length.md
cd bench/calibrate
$P threads.py $G/corpus 600 > /tmp/r18/threads/600.md
$P sched.py $G/corpus --policy fifo --rates 200,600 --out /tmp/r18/sched/fifo.json > /dev/null
$P sched.py $G/corpus --policy sjf --rates 200,600 --out /tmp/r18/sched/sjf.json > /dev/null
date -u >> /tmp/r18/run.times
