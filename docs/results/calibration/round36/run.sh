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
# 3. The judged file with stops (this machine's lengths, each run's rate from the fifteen
#    grids' steal), and the runs' char_cnn p99 spread under it (about 20 s).
PYTHONPATH=bench/calibrate .venv/bin/python $D/stops_scenario.py $D/out/idle-1.json \
  $D/out/idle-2.json --write $D/scenarios/stops.toml
PYTHONPATH=bench/calibrate .venv/bin/python $D/spread.py $D/scenarios/stops.toml \
  > $D/out/spread-stops.md
# 4. It judged on the fifteen grids as round 29 judged the file (about 5 minutes), and counted
#    beside the file's own tables (round29/out).
sh docs/results/calibration/round29/judge_all.sh $D/scenarios/stops.toml stops $D/out
R=docs/results/calibration
{ .venv/bin/python $R/round22/count.py $R/round29/out/committed-hour-r*-pooled.md \
    $D/out/stops-hour-r*-pooled.md
  .venv/bin/python $R/round22/count.py $R/round29/out/grids/committed-hour-on-*.md \
    $D/out/grids/stops-hour-on-*.md; } > $D/out/counts.txt
# 5. Each model's p99 against the lab, the file and the file with stops, with today's simulator
#    (about 5 minutes each).
PYTHONPATH=bench/calibrate .venv/bin/python $R/round29/by_model.py $D/scenarios/stops.toml \
  > $D/out/by-model-stops.md
PYTHONPATH=bench/calibrate .venv/bin/python $R/round29/by_model.py > $D/out/by-model-committed.md
