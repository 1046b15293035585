#!/bin/sh
# The thirty-seventh round, every command in the order it ran, from the repository root
# (docs/results/calibration.md, "The thirty-seventh round").
set -e
D=$PWD/docs/results/calibration/round37; R=$PWD/docs/results/calibration
# 1. Two grids on this machine with every call's run delay in the timeline (2026-12-03 18:00
#    and 18:14 UTC, about 9 minutes each; traces kept in /tmp/r37).
sh $D/lab.sh 213
sh $D/lab.sh 217
# 2. The stops the calls met, per variant and level, beside the idle probe's (round 36) and the
#    runs' steal; their lengths and each run's rate kept in out/stops-met.json.
PYTHONPATH=bench/calibrate .venv/bin/python $D/stops_met.py /tmp/r37/grid-seed213 \
  /tmp/r37/grid-seed217 --idle $R/round36/out/idle-1.json $R/round36/out/idle-2.json \
  --json $D/out/stops-met.json > $D/out/stops-met.md
# 3. The judged file with those stops.
PYTHONPATH=bench/calibrate .venv/bin/python $D/calls_scenario.py $D/out/stops-met.json \
  --write $D/scenarios/calls-stops.toml
# 4. The file, round 36's stops and these judged on this machine's seven grids (round 34's
#    five and this round's two), each scaled to its hour (about 2 minutes a scenario).
GRIDS="$R/round31/grid-seed201 $R/round33/grid-seed203 $R/round33/grid-seed205 \
  $R/round34/grid-seed207 $R/round34/grid-seed211 $D/grid-seed213 $D/grid-seed217" \
  OUT=$D/out/judged sh $R/round34/judge_intel.sh \
  file=$R/round27/scenarios/seed157-reading.toml stops36=$R/round36/scenarios/stops.toml \
  calls=$D/scenarios/calls-stops.toml > $D/out/judged/counts.txt
# 5. Each model's p99 on the same seven grids: the file, round 36's stops and these (round 29's
#    by_model.py with GRIDS set; about 2 minutes each).
export GRIDS="$R/round31/grid-seed201 $R/round33/grid-seed203 $R/round33/grid-seed205 \
  $R/round34/grid-seed207 $R/round34/grid-seed211 $D/grid-seed213 $D/grid-seed217"
for s in file=$R/round27/scenarios/seed157-reading.toml stops36=$R/round36/scenarios/stops.toml \
  calls=$D/scenarios/calls-stops.toml; do
  PYTHONPATH=bench/calibrate .venv/bin/python $R/round29/by_model.py ${s#*=} \
    > $D/out/by-model-${s%%=*}.md
done
