#!/bin/sh
# The thirty-sixth round, every command in the order it ran, from the repository root
# (docs/results/calibration.md, "The thirty-sixth round").
set -e
D=docs/results/calibration/round36
# 1. The stops of this machine, idle, twice one minute (2026-12-03 15:52 and 15:53 UTC): one
#    spinning probe per core; both cores busy, so nothing else ran.
for i in 1 2; do
  .venv/bin/python bench/calibrate/stops.py --seconds 60 --json $D/out/idle-$i.json
  .venv/bin/python bench/calibrate/stops.py --from $D/out/idle-$i.json > $D/out/idle-$i.md
done
# 2. What those stops alone do to a short call, as measured and 10 and 25 times as often
#    (about 25 s).
.venv/bin/python $D/effect.py $D/out/idle-1.json $D/out/idle-2.json --times 1,10,25 \
  > $D/out/effect.md
