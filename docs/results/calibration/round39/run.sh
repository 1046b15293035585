#!/bin/sh
# The thirty-ninth round, every command in the order it ran, from the repository root
# (docs/results/calibration.md, "The thirty-ninth round").
set -e
D=$PWD/docs/results/calibration/round39; R=$PWD/docs/results/calibration; P=$PWD/.venv/bin/python
FILE=$R/round27/scenarios/seed157-reading.toml
INTEL="$R/round31/grid-seed201 $R/round33/grid-seed203 $R/round33/grid-seed205 \
  $R/round34/grid-seed207 $R/round34/grid-seed211 $R/round37/grid-seed213 $R/round37/grid-seed217"
# 1. The file judged up to the lab's capacity at SLO (against_demo.py --knee capacity) on every
#    grid judged in round 38: its two quiet grids, the fifteen of rounds 25-29 (grid by grid and
#    pooled per hour) and the Intel machine's seven, each scaled to its hour against grid 157.
mkdir -p $D/out/capacity
GRIDS="$R/round38/grid-seed221 $R/round38/grid-seed223" OUT=$D/out/capacity KNEE=capacity \
  sh $R/round34/judge_intel.sh file=$FILE > /dev/null
KNEE=capacity sh $R/round29/judge_all.sh $FILE file $D/out/capacity
GRIDS="$INTEL" OUT=$D/out/capacity/intel KNEE=capacity sh $R/round34/judge_intel.sh \
  file=$FILE > /dev/null
{ $P $R/round22/count.py $D/out/capacity/file-hour-on-grid-seed22*.md
  $P $R/round22/count.py $D/out/capacity/file-hour-r*-pooled.md
  $P $R/round22/count.py $D/out/capacity/grids/file-hour-on-*.md
  $P $R/round22/count.py $D/out/capacity/intel/file-hour-on-*.md; } > $D/out/capacity/counts.txt
# 2. Where the figures up to the lab's capacity miss, per figure and level, and the p99's
#    signed error per variant and level: this host's seventeen grids and the Intel machine's seven.
C=$D/out/capacity
$P $D/where.py $C/file-hour-on-grid-seed22*.md $C/grids/file-hour-on-*.md > $D/out/where-amd.md
$P $D/where.py $C/intel/file-hour-on-*.md > $D/out/where-intel.md
