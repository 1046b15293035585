#!/bin/sh
# The thirtieth round's analyses (docs/results/calibration.md, "The thirtieth round"), from the
# repository root; round 29's grids with their request traces in /tmp/r29 (run.sh of round 29),
# the committed grids of rounds 25-29 otherwise (part 6, the one fresh grid: lab.sh, judge.sh).
# Outputs in out/.
set -e
ROOT=$PWD; P=$ROOT/.venv/bin/python; D=$ROOT/docs/results/calibration/round30; O=$D/out
R=$ROOT/docs/results/calibration; T=/tmp/r29
mkdir -p $O
export PYTHONPATH=$ROOT/bench/calibrate
# 1. The simulator's slowest requests taken apart as the lab's (tails.py --sim, now with the
#    simulator's oldest_ms), grid 193's sjf at 600 and 800 req/s, the file scaled to its hour.
$P $ROOT/bench/calibrate/tails.py $T/grid-seed193 --variant sjf --rates 600,800 --sim \
  --scenario $R/round27/scenarios/seed157-reading.toml --hour-speed $R/round27/grid-seed157 \
  --seeds 5 --requests 20000 --markdown $O/tails-sjf-193.md > /dev/null
# 2. The lab's batches' cost curve over the fifteen grids, and the variants judged on them.
GRIDS=$(D=$R/round29; . $R/round29/grids.sh; echo $R25 $R26 $R26b $R27 $R27b $R28 $R28b $R29)
$P $D/curve.py $GRIDS > $O/curve.md
for v in en-curve en-mean seed157-pooled speed-deep speed-wall speed-deeper; do
  sh $R/round29/judge_all.sh $D/scenarios/$v.toml $v $O
  $P $R/round29/by_model.py $D/scenarios/$v.toml > $O/by-model-$v.md
done
# 3. What the short models' tails are not: contention between the executors, the arrivals.
$P $D/overlap.py $T/grid-seed19[37]/runs/fifo/L*-r?.trace.json \
  $T/grid-seed19[37]/runs/sjf/L*-r?.trace.json > $O/overlap.md
$P $D/arrivals_by_model.py $D/scenarios/seed157-pooled.toml $T/grid-seed193 $T/grid-seed197 \
  > $O/arrivals-by-model.md
$P $D/outside.py $T/grid-seed193 $T/grid-seed197 > $O/outside.md
# 4. How far single runs spread, lab against simulator; one long run taken apart.
for rate in 400 600 800; do
  $P $D/spread.py $D/scenarios/seed157-pooled.toml $rate > $O/spread-$rate.md
done
$P $D/one_run.py $T/grid-seed197/runs/sjf/L3-r2.trace.json --over 30 --from 1600 --to 1700 \
  > $O/one-run-197-sjf-L3-r2.md
# 5. The host's speed over time read at each level (host_speed.py --cpu), against the file's
#    speed_cv 0.1 (read at 600-800 req/s in round 25).
for g in 193 197; do
  for l in 0 1 2 3 4; do
    echo "grid $g, level $l: $($P $ROOT/bench/calibrate/host_speed.py $T/grid-seed$g --levels $l --cpu)"
  done
done > $O/host-speed-by-level.txt
# 6. The counts: every variant's tables pooled per hour and grid by grid, and their sums.
for v in en-curve en-mean seed157-pooled speed-deep speed-wall speed-deeper; do
  for f in "$O/$v-hour-r*-pooled.md" "$O/grids/$v-hour-on-*.md"; do
    $P $R/round22/count.py $f | tee -a $O/counts.tmp | awk -v v=$v -v f="$f" \
      '{w += $2; t += $4} END {print v ": " w " of " t " within 15 % (" (f ~ /grids/ ? "grid by grid" : "pooled per hour") ")"}'
  done
done > $O/counts-sums.txt
mv $O/counts.tmp $O/counts.txt
# 7. Would slower spells of the host's speed give the short models the lab's spread? The file's
#    source with longer epochs (speed_ms 1000) and deeper ones (speed_cv 0.15, 0.2).
for name in long deep deeper; do
  for rate in 600 800; do
    $P $D/spread.py $D/scenarios/speed-$name.toml $rate > $O/spread-speed-$name-$rate.md
  done
done
# 8. The speed as host_speed.py reads it off the calls' wall time, lab against simulated: the
#    speed process the simulator needs so that its own reading meets the lab's (sim_speed.py).
mkdir -p /tmp/r30-speed
for cv in 0.15 0.17 0.19; do
  for ms in 70 100 150; do
    sed -e "s/^speed_cv = 0.1$/speed_cv = $cv/" -e "s/^speed_ms = 250.0$/speed_ms = $ms.0/" \
      $D/scenarios/seed157-pooled.toml > /tmp/r30-speed/cv$cv-ms$ms.toml
  done
done
for g in 193 197; do
  for lv in "2 600" "3 800"; do
    set -- $lv
    $P $D/sim_speed.py $T/grid-seed$g $1 $2 $D/scenarios/seed157-pooled.toml \
      $D/scenarios/speed-deep.toml $D/scenarios/speed-wall.toml /tmp/r30-speed/*.toml
  done
done > $O/sim-speed.txt
