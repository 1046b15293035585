#!/bin/sh
# The thirty-eighth round, every command in the order it ran, from the repository root
# (docs/results/calibration.md, "The thirty-eighth round").
set -e
D=$PWD/docs/results/calibration/round38; R=$PWD/docs/results/calibration; P=$PWD/.venv/bin/python
FILE=$R/round27/scenarios/seed157-reading.toml
# 1. Two grids on the AMD EPYC host the file was read off (rounds 25-29), every call's CPU and
#    run delay in the timelines (2026-12-04 18:57 and 19:05 UTC, about 9 minutes each; traces
#    kept in /tmp/r38).
sh $D/lab.sh 221
sh $D/lab.sh 223
# 2. The stops the calls met on this host, per variant and level (round 37's stops_met.py).
mkdir -p $D/out $D/scenarios
PYTHONPATH=bench/calibrate $P $R/round37/stops_met.py /tmp/r38/grid-seed221 /tmp/r38/grid-seed223 \
  --json $D/out/stops-met.json > $D/out/stops-met.md
# 3. The file with them (round 37's calls_scenario.py: stop lengths and each run's rate of stops).
PYTHONPATH=bench/calibrate $P $R/round37/calls_scenario.py $D/out/stops-met.json \
  --base $FILE --write $D/scenarios/amd-stops.toml
# 4. The file, round 36's stops (the Intel machine's idle lengths) and these, judged on the two
#    new grids, each scaled to its hour against grid 157.
mkdir -p $D/out/judged-new
GRIDS="$D/grid-seed221 $D/grid-seed223" OUT=$D/out/judged-new sh $R/round34/judge_intel.sh \
  file=$FILE stops36=$R/round36/scenarios/stops.toml amd=$D/scenarios/amd-stops.toml \
  > $D/out/judged-new/counts.txt
# 5. The file and these stops on the fifteen grids of rounds 25-29 (round 29's judge_all.sh),
#    counted beside each other.
sh $R/round29/judge_all.sh $FILE file $D/out/judged-old
sh $R/round29/judge_all.sh $D/scenarios/amd-stops.toml amd $D/out/judged-old
{ $P $R/round22/count.py $D/out/judged-old/file-hour-r*-pooled.md \
    $D/out/judged-old/amd-hour-r*-pooled.md
  $P $R/round22/count.py $D/out/judged-old/grids/file-hour-on-*.md \
    $D/out/judged-old/grids/amd-hour-on-*.md; } > $D/out/judged-old/counts.txt
# 6. Each model's p99 on all seventeen grids of this host: the file and the file with stops.
OLD=$(D=$R/round29; . $R/round29/grids.sh; echo $R25 $R26 $R26b $R27 $R27b $R28 $R28b $R29)
export GRIDS="$OLD $D/grid-seed221 $D/grid-seed223"
for s in file=$FILE amd=$D/scenarios/amd-stops.toml; do
  PYTHONPATH=bench/calibrate $P $R/round29/by_model.py ${s#*=} > $D/out/by-model-${s%%=*}.md
done
# 7. The file on the two new grids with the hour's speed read over every level instead of the
#    lightest (against_demo.py --hour-levels all).
mkdir -p $D/out/judged-all-levels
for g in 221 223; do
  (cd bench/calibrate && PYTHONPATH=. $P against_demo.py $D/grid-seed$g --grid --scenario $FILE \
    --windows 100 --hour-speed $R/round27/grid-seed157 --hour-levels all \
    --markdown $D/out/judged-all-levels/file-all-levels-on-grid-seed$g.md > /dev/null)
done
(cd $D/out/judged-all-levels && $P $R/round22/count.py file-all-levels-on-*.md) \
  > $D/out/judged-all-levels/counts.txt
# 8. The same on the fifteen grids of rounds 25-29.
HOUR_LEVELS=all sh $R/round29/judge_all.sh $FILE file-all-levels $D/out/judged-all-levels
{ $P $R/round22/count.py $D/out/judged-all-levels/file-all-levels-hour-r*-pooled.md
  $P $R/round22/count.py $D/out/judged-all-levels/grids/file-all-levels-hour-on-*.md; } \
  > $D/out/judged-all-levels/counts-old.txt
# 9. Each model's p99 on the two new grids alone, the file (a quiet hour's short tails).
GRIDS="$D/grid-seed221 $D/grid-seed223" PYTHONPATH=bench/calibrate $P $R/round29/by_model.py \
  $FILE > $D/out/by-model-file-new-grids.md
# 10. The hour's speed level by level (hour_speed.py --levels each, against_demo.py
#     --hour-levels each): the file on this host's seventeen grids and the Intel machine's
#     seven, beside the light-level rule (the Intel grids' light-level tables from round 37).
mkdir -p $D/out/judged-each
GRIDS="$D/grid-seed221 $D/grid-seed223" OUT=$D/out/judged-each HOUR_LEVELS=each \
  sh $R/round34/judge_intel.sh file-each=$FILE > /dev/null
HOUR_LEVELS=each sh $R/round29/judge_all.sh $FILE file-each $D/out/judged-each
GRIDS="$R/round31/grid-seed201 $R/round33/grid-seed203 $R/round33/grid-seed205 \
  $R/round34/grid-seed207 $R/round34/grid-seed211 $R/round37/grid-seed213 $R/round37/grid-seed217" \
  OUT=$D/out/judged-each/intel HOUR_LEVELS=each sh $R/round34/judge_intel.sh file-each=$FILE \
  > /dev/null
{ $P $R/round22/count.py $D/out/judged-each/file-each-hour-on-grid-seed22*.md
  $P $R/round22/count.py $D/out/judged-each/file-each-hour-r*-pooled.md
  $P $R/round22/count.py $D/out/judged-each/grids/file-each-hour-on-*.md
  $P $R/round22/count.py $D/out/judged-each/intel/file-each-hour-on-*.md; } \
  > $D/out/judged-each/counts.txt
