#!/bin/sh
# The twenty-first round's grids, from the repository root (2026-11-29), under the lab lock on a
# quiet host: seed 1 then seed 11 back to back (round21/experiment-seed*.toml, 60 runs each),
# timelines.py on each, then threads.py at 600 req/s and sched.py at 200 and 600 req/s (fifo,
# sjf) for the same-hour reading of the seed-1 grid (read-seeds.sh).
set -e
P=$PWD/.venv/bin/python; D=docs/results/calibration/round21
export PATH=$PWD/.venv/bin:$PATH
mkdir -p /tmp/r21/threads /tmp/r21/sched
date -u > /tmp/r21/run.times
for seed in 1 11; do
  lanes bench run $D/experiment-seed$seed.toml --out /tmp/r21/grid-seed$seed
  date -u >> /tmp/r21/run.times
  (cd bench/calibrate && $P timelines.py /tmp/r21/grid-seed$seed)
done
cd bench/calibrate
$P threads.py /tmp/r21/grid-seed1/corpus 600 > /tmp/r21/threads/600.md
$P sched.py /tmp/r21/grid-seed1/corpus --policy fifo --rates 200,600 --out /tmp/r21/sched/fifo.json > /dev/null
$P sched.py /tmp/r21/grid-seed1/corpus --policy sjf --rates 200,600 --out /tmp/r21/sched/sjf.json > /dev/null
date -u >> /tmp/r21/run.times
