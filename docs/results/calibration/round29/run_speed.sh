#!/bin/sh
# The twenty-ninth round's model change (from the repository root, after run.sh): the run's own
# speed (host.speed_run_cv, new). Read with host_speed.py --between-runs off the grids of this
# host state (rounds 25-28: the host of 2026-12-01 23:11 onwards, 13 grids, 208 degrees of
# freedom) given the committed epochs (speed_cv 0.1, speed_ms 250), and grid by grid; laid on the
# committed file (scenarios/committed-run-speed.toml); then both files judged grid by grid,
# scaled to each grid's hour against grid 157 (which the committed file was read off), and pooled
# per round, on every grid of rounds 25-29 (judge_all.sh). Counts in out/counts-run-speed.txt.
set -e
ROOT=$PWD; P=$ROOT/.venv/bin/python; D=$ROOT/docs/results/calibration/round29; O=$D/out
R=$ROOT/docs/results/calibration
C=$R/round27/scenarios/seed157-reading.toml; REF=$R/round27/grid-seed157
. $D/grids.sh
mkdir -p $O $D/scenarios
cd bench/calibrate
export PYTHONPATH=.
$P host_speed.py $R25 $R26 $R26b $R27 $R27b $R28 $R28b --between-runs 0.1,250 \
  --json $O/run-speed.json > $O/run-speed.txt
for g in $R25 $R26 $R26b $R27 $R27b $R28 $R28b $R29; do
  $P host_speed.py $g --between-runs 0.1,250 >> $O/run-speed.txt
done
CV=$($P -c "import json; print(json.load(open('$O/run-speed.json'))['speed_run_cv'])")
S=$D/scenarios/committed-run-speed.toml
sed -e "s/^speed_ms = 250.0$/speed_ms = 250.0\nspeed_run_cv = $CV/" $C > $S
grep -q "^speed_run_cv = $CV$" $S
cd $ROOT
sh $D/judge_all.sh $C committed
sh $D/judge_all.sh $S run-speed
{ $P $R/round22/count.py $O/committed-hour-r*-pooled.md $O/run-speed-hour-r*-pooled.md
  $P $R/round22/count.py $O/grids/committed-hour-on-*.md $O/grids/run-speed-hour-on-*.md; } > $O/counts-run-speed.txt
date -u
