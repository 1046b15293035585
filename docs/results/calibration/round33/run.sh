#!/bin/sh
# The thirty-third round (docs/results/calibration.md), from the repository root, in the order it
# ran on 2026-12-03: two grids of this machine, the threads and preemptions beside them, the
# same-hour reading, then the judgements (rerun at 06:58-07:12 UTC with the simulator's goodput per
# second of sending, as the lab counts it). Each timed step under the lab lock. Outputs in out/.
set -e
ROOT=$PWD; P=$ROOT/.venv/bin/python; R=$ROOT/docs/results/calibration; D=$R/round33; O=$D/out
L="flock /tmp/lanes-bench.lock"
$L sh $D/lab.sh 203            # 05:42-05:52 UTC
$L sh $D/lab.sh 205            # 05:57-06:07 UTC
$L sh $D/run-threads.sh        # 06:08 UTC
$L sh $D/read.sh               # out/seed203-*, file-host-203-*, file-hour-*, self-*, counts.txt
# the runs' own speed on this machine's three grids, the file with grid 201's reading of it
for g in /tmp/r31/grid-seed201 /tmp/r33/grid-seed203 /tmp/r33/grid-seed205; do
  echo "$g: $($P bench/calibrate/host_speed.py --between-runs 0.1,250 $g | tail -1)"
done > $O/run-speed.txt
$P $D/runs.py /tmp/r31/grid-seed201 /tmp/r33/grid-seed203 /tmp/r33/grid-seed205 > $O/runs.txt
$P $D/warm.py /tmp/r31/grid-seed201 > $O/warm-201.txt
$P $D/warm.py /tmp/r33/grid-seed205 > $O/warm-205.txt
$L sh $D/judge_intel.sh file=examples/scenarios/cpu-2core.toml run-0.079=$D/scenarios/run-0.079.toml \
  > $O/intel/counts.txt
# the committed file on the fifteen grids of the earlier host, the goodput as the lab measures it
$L sh $R/round29/judge_all.sh examples/scenarios/cpu-2core.toml file $O/amd
echo "file, the goodput as the lab measures it: $($P $R/round22/count.py $O/amd/file-hour-r*-pooled.md | awk '{w+=$2; t+=$4; c+=$11} END {print w" of "t" pooled, "c" within 15 % or the CI"}'), $($P $R/round22/count.py $O/amd/grids/file-hour-on-*.md | awk '{w+=$2; t+=$4} END {print w" of "t" grid by grid"}')" > $O/amd/counts-sums.txt
