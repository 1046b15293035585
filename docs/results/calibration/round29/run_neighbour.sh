#!/bin/sh
# The twenty-ninth round's second model change (from the repository root, after run_speed.sh,
# which judged the committed file with judge_all.sh): a neighbour's cores over a run
# (host.busy_run_cores, new), read with neighbour.py off the 780 runs of rounds 25-28 (this host
# state) and laid on the committed file (scenarios/committed-neighbour.toml); then judged as
# run_speed.sh judged the committed file. Counts in out/counts-neighbour.txt.
set -e
ROOT=$PWD; P=$ROOT/.venv/bin/python; D=$ROOT/docs/results/calibration/round29; O=$D/out
R=$ROOT/docs/results/calibration
C=$R/round27/scenarios/seed157-reading.toml
$P bench/calibrate/neighbour.py $R/round25/grid-seed127 $R/round25/grid-seed131 \
  $R/round26/grid-seed137 $R/round26/grid-seed139 $R/round26/grid-seed149 $R/round26/grid-seed151 \
  $R/round27/grid-seed157 $R/round27/grid-seed163 $R/round27/grid-seed167 $R/round27/grid-seed173 \
  $R/round28/grid-seed179 $R/round28/grid-seed181 $R/round28/grid-seed191 \
  --json $O/neighbour.json > $O/neighbour.txt
LINE=$(grep '^busy_run_cores' $O/neighbour.txt)
S=$D/scenarios/committed-neighbour.toml
awk -v line="$LINE" '{print} /^busy_cores = /{print line}' $C > $S
grep -q '^busy_run_cores = ' $S
sh $D/judge_all.sh $S neighbour
{ $P $R/round22/count.py $O/committed-hour-r*-pooled.md $O/neighbour-hour-r*-pooled.md
  $P $R/round22/count.py $O/grids/committed-hour-on-*.md $O/grids/neighbour-hour-on-*.md; } > $O/counts-neighbour.txt
date -u
