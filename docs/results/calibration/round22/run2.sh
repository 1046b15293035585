#!/bin/sh
# The twenty-second round, part 3, from the repository root (2026-11-29), under the lab lock: two
# more grids back to back on fresh seeds (71, 89), to see whether the seed-53 reading and the
# lab's own repeat carry to a third and fourth sample of arrivals (read-2.sh).
set -e
P=$PWD/.venv/bin/python; D=docs/results/calibration/round22
export PATH=$PWD/.venv/bin:$PATH
date -u >> /tmp/r22/run2.times
for seed in 71 89; do
  lanes bench run $D/experiment-seed$seed.toml --out /tmp/r22/grid-seed$seed
  date -u >> /tmp/r22/run2.times
  (cd bench/calibrate && $P timelines.py /tmp/r22/grid-seed$seed)
done
date -u >> /tmp/r22/run2.times
