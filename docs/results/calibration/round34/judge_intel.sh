#!/bin/sh
# Round 34: scenarios judged on this machine's grids (the Intel Xeon VM of rounds 31-34: 201 of
# round 31, 203 and 205 of round 33, 207 and 211 of this round; none read off by either file),
# each scaled to its grid's hour against grid 157, 100 windows per level, from the repository root.
# Run:  sh docs/results/calibration/round34/judge_intel.sh NAME=SCENARIO ...
#       (tables in out/intel/, or OUT=DIR; GRIDS="..." to judge on fewer or others; REF=GRID
#       to scale to the hours against another grid than 157; round 37 adds its grids 213 and
#       217, its own OUT, and a reading of grid 213 scaled against it; HOUR_LEVELS=all|each
#       reads the hour's speed over every level or level by level, round 38; KNEE=capacity
#       counts up to the lab's capacity at SLO, round 39)
set -e
ROOT=$PWD; P=$ROOT/.venv/bin/python; R=$ROOT/docs/results/calibration; O=${OUT:-$R/round34/out/intel}
mkdir -p $O
GRIDS=${GRIDS:-"$R/round31/grid-seed201 $R/round33/grid-seed203 $R/round33/grid-seed205 $R/round34/grid-seed207 $R/round34/grid-seed211"}
for ns in "$@"; do
  n=${ns%%=*}; s=$(realpath ${ns#*=})
  for g in $GRIDS; do
    (cd $ROOT/bench/calibrate && PYTHONPATH=. $P against_demo.py $g --grid --scenario $s \
      --windows 100 --hour-speed ${REF:-$R/round27/grid-seed157} \
      --hour-levels ${HOUR_LEVELS:-lightest} --knee ${KNEE:-goodput} \
      --markdown $O/$n-hour-on-$(basename $g).md > /dev/null)
  done
done
(cd $O && $P $R/round22/count.py *.md)
