#!/bin/sh
# The thirty-first round (docs/results/calibration.md, "The thirty-first round"), from the
# repository root, after lab.sh (the traced grid in /tmp/r31/grid-seed201). Outputs in out/.
set -e
ROOT=$PWD; P=$ROOT/.venv/bin/python; D=$ROOT/docs/results/calibration/round31; O=$D/out
R=$ROOT/docs/results/calibration; G=/tmp/r31/grid-seed201
export PYTHONPATH=$ROOT/bench/calibrate
sh $D/scenarios.sh 0.04,0.16 0.02,0.17 0.06,0.16 0.08,0.2,4 0.08,0.22,4 0.08,0.22,6 0.09,0.2,3
# 1. The spells by level, lab against simulator (the file, cv 0.15, depth by load).
$P $D/depth.py $G $R/round30/scenarios/seed157-pooled.toml $R/round30/scenarios/speed-deep.toml \
  $D/scenarios/load-0.06-0.16.toml $D/scenarios/load-0.08-0.2-p4.toml \
  $D/scenarios/load-0.08-0.22-p4.toml $D/scenarios/load-0.08-0.22-p6.toml $D/scenarios/load-0.09-0.2-p3.toml \
  --markdown $O/depth-201.md > /dev/null
# 2. Within a run: the slowdown against the backlog and the arrivals, 50 ms windows.
for lv in 2 3 4; do
  $P $D/lead_lag.py $G $lv 50; $P $D/lead_lag.py $G $lv 50 --against arrivals
done > $O/lead-lag-201.txt
# 3. The candidates judged on the fifteen grids, their counts and the p99's bias by level.
for v in load-0.04-0.16 load-0.02-0.17 load-0.06-0.16 load-0.08-0.2-p4 load-0.08-0.22-p4; do
  sh $R/round29/judge_all.sh $D/scenarios/$v.toml $v $O
done
for v in load-0.04-0.16 load-0.02-0.17 load-0.06-0.16 load-0.08-0.2-p4 load-0.08-0.22-p4; do
  echo "$v: $($P $R/round22/count.py $O/$v-hour-r*-pooled.md | awk '{w+=$2; t+=$4; c+=$11} END {print w" of "t" pooled, "c" within 15 % or the CI"}'), $($P $R/round22/count.py $O/grids/$v-hour-on-*.md | awk '{w+=$2; t+=$4} END {print w" of "t" grid by grid"}')"
done > $O/counts-sums.txt
for v in load-0.06-0.16 load-0.08-0.2-p4; do
  $P $D/bias.py $R/round30/out/seed157-pooled $O/$v > $O/bias-$v.md
done
$P $D/bias.py $R/round30/out/seed157-pooled $R/round30/out/speed-deep > $O/bias-speed-deep.md
# 4. The two fresh grids (199, and 201 on this session's machine).
mkdir -p $O/fresh
for g in $R/round30/grid-seed199 $D/grid-seed201; do
  for s in $R/round30/scenarios/seed157-pooled.toml $R/round30/scenarios/speed-deep.toml \
    $D/scenarios/load-0.06-0.16.toml $D/scenarios/load-0.08-0.2-p4.toml; do
    (cd $ROOT/bench/calibrate && $P against_demo.py $g --grid --scenario $s --windows 100 \
      --hour-speed $R/round27/grid-seed157 \
      --markdown $O/fresh/$(basename $s .toml)-hour-on-$(basename $g).md > /dev/null)
  done
done
(cd $O && $P $R/round22/count.py fresh/*.md) > $O/counts-fresh.txt
# 5. The speed probe's spread within a run, every grid of the earlier host and this one.
$P $D/probe_spread.py $R/round2[5-9]/grid-seed* $R/round30/grid-seed199 $D/grid-seed201 \
  > $O/probe-spread.txt
