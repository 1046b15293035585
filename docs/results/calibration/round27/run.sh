#!/bin/sh
# The twenty-seventh round's grids, from the repository root (2026-12-02), under the lab lock: two
# fresh arrival seeds (157, 163) back to back, 60 runs each (round27/experiment-seed*.toml, round
# 26's experiment with new seeds), timelines.py on each, then threads.py at 600 req/s and
# sched.py at 200 and 600 req/s (fifo, sjf) on the seed-157 grid's corpus for a same-hour
# reading, as round 26's run2.sh and run-threads.sh did.
set -e
P=$PWD/.venv/bin/python; D=docs/results/calibration/round27
export PATH=$PWD/.venv/bin:$PATH
mkdir -p /tmp/r27/threads /tmp/r27/sched
date -u > /tmp/r27/run.times
for seed in 157 163; do
  lanes bench run $D/experiment-seed$seed.toml --out /tmp/r27/grid-seed$seed
  date -u >> /tmp/r27/run.times
  (cd bench/calibrate && $P timelines.py /tmp/r27/grid-seed$seed)
done
(cd bench/calibrate && $P threads.py /tmp/r27/grid-seed157/corpus 600 > /tmp/r27/threads/600.md &&
  $P sched.py /tmp/r27/grid-seed157/corpus --policy fifo --rates 200,600 --out /tmp/r27/sched/fifo.json > /dev/null &&
  $P sched.py /tmp/r27/grid-seed157/corpus --policy sjf --rates 200,600 --out /tmp/r27/sched/sjf.json > /dev/null)
date -u >> /tmp/r27/run.times
# the committed copies (run files, plan, summary, timelines.json; no request traces)
for seed in 157 163; do
  G=/tmp/r27/grid-seed$seed; K=$D/grid-seed$seed
  for v in fifo sjf independent default; do mkdir -p $K/runs/$v; cp $G/runs/$v/L*-r?.json $K/runs/$v/; done
  cp $G/plan.json $G/summary.json $G/timelines.json $K/
done
