#!/bin/sh
# The seventeenth round, from the repository root (2026-11-28): the grid (7 min, a quiet host,
# nothing else running; every slice of its device timelines carries the call's cpu_ms), the
# per-model table of the calls' time off a core, then sched.py at 600 req/s under the same lock.
set -e
G=/tmp/r17/grid; D=docs/results/calibration/round17
lanes bench run $D/experiment.toml --out $G
(cd bench/calibrate && python timelines.py $G)
python $D/calls.py $G > $D/out/calls.md
(cd bench/calibrate \
  && python sched.py $G/corpus --policy independent --rates 600 --out /tmp/r17/sched/independent.json \
  && python sched.py $G/corpus --policy fifo --rates 600 --out /tmp/r17/sched/fifo.json)
python $D/by_length.py $G > $D/out/by-length.md
