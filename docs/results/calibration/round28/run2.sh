#!/bin/sh
# The twenty-eighth round's second part, from the repository root, under the lab lock, after CI:
# the check as it is meant to run, out of sample at a later hour: a light grid (light3), a full
# grid on a fresh arrival seed (191) for the truth, and a light grid again (light4); then
# host_moved.py on each light grid and on both together, and both files on the full grid.
set -e
P=$PWD/.venv/bin/python; D=docs/results/calibration/round28; R=$PWD/docs/results/calibration
export PATH=$PWD/.venv/bin:$PATH
date -u > /tmp/r28/run2.times
sh $D/light.sh light3
lanes bench run $D/experiment-seed191.toml --out /tmp/r28/grid-seed191
(cd bench/calibrate && $P timelines.py /tmp/r28/grid-seed191)
date -u >> /tmp/r28/run2.times
sh $D/light.sh light4
G=/tmp/r28/grid-seed191; K=$D/grid-seed191
for v in fifo sjf independent default; do mkdir -p $K/runs/$v; cp $G/runs/$v/L*-r?.json $K/runs/$v/; done
cp $G/plan.json $G/summary.json $G/timelines.json $K/
O=$PWD/$D/out; K=$PWD/$K
cd bench/calibrate
export PYTHONPATH=.
$P host_moved.py $PWD/../../$D/light3 $PWD/../../$D/light4 --markdown $O/moved-new-on-light34.md > /dev/null || true
$P host_moved.py $PWD/../../$D/light3 $PWD/../../$D/light4 --scenario $R/round26/scenarios/committed.toml \
  --reference $R/round21/grid-seed1 --markdown $O/moved-old-on-light34.md > /dev/null || true
$P against_demo.py $K --grid --scenario $R/round27/scenarios/seed157-reading.toml --windows 100 \
  --hour-speed $R/round27/grid-seed157 --markdown $O/new-hour-on-grid-seed191.md > /dev/null
$P against_demo.py $K --grid --scenario $R/round26/scenarios/committed.toml --windows 100 \
  --hour-speed $R/round21/grid-seed1 --markdown $O/old-hour-on-grid-seed191.md > /dev/null
$P host_moved.py $K --markdown $O/moved-new-on-grid-seed191.md > /dev/null || true
$P host_moved.py $K --scenario $R/round26/scenarios/committed.toml --reference $R/round21/grid-seed1 \
  --markdown $O/moved-old-on-grid-seed191.md > /dev/null || true
$P $R/round22/count.py $O/*-hour-on-grid-seed191.md > $O/counts-191.txt
head -qn1 $O/moved-*-on-light3*.md $O/moved-*-on-light4.md $O/moved-*-seed191.md >> $O/counts-191.txt
date -u >> /tmp/r28/run2.times
