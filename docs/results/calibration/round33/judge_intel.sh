#!/bin/sh
# Round 33: scenarios judged on this machine's two grids (201 of round 31, 203 of this round), each
# scaled to its grid's hour against grid 157, 100 windows per level, from the repository root.
# Run:  sh docs/results/calibration/round33/judge_intel.sh NAME=SCENARIO ... (tables in out/intel/)
set -e
ROOT=$PWD; P=$ROOT/.venv/bin/python; R=$ROOT/docs/results/calibration; O=$R/round33/out/intel
mkdir -p $O
for ns in "$@"; do
  n=${ns%%=*}; s=$(realpath ${ns#*=})
  for g in $R/round31/grid-seed201 $R/round33/grid-seed203; do
    (cd $ROOT/bench/calibrate && PYTHONPATH=. $P against_demo.py $g --grid --scenario $s \
      --windows 100 --hour-speed $R/round27/grid-seed157 \
      --markdown $O/$n-hour-on-$(basename $g).md > /dev/null)
  done
done
(cd $O && $P $R/round22/count.py *.md)
