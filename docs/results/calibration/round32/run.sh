#!/bin/sh
# The thirty-second round (docs/results/calibration.md), from the repository root: the committed
# file with the lab's 64 connections per load generator (client_connections), judged on the
# fifteen grids of this host state as rounds 29-31 judged theirs. Outputs in out/.
set -e
ROOT=$PWD; P=$ROOT/.venv/bin/python; D=$ROOT/docs/results/calibration/round32; O=$D/out
R=$ROOT/docs/results/calibration
sh $R/round29/judge_all.sh $D/scenarios/file-conn64.toml file-conn64 $O
echo "file-conn64: $($P $R/round22/count.py $O/file-conn64-hour-r*-pooled.md | awk '{w+=$2; t+=$4; c+=$11} END {print w" of "t" pooled, "c" within 15 % or the CI"}'), $($P $R/round22/count.py $O/grids/file-conn64-hour-on-*.md | awk '{w+=$2; t+=$4} END {print w" of "t" grid by grid"}')" > $O/counts-sums.txt
