#!/bin/sh
# A light grid (examples/experiments/calibration-light.toml: the lowest level alone, 12 runs), run
# from the repository root right after run.sh's grids, and host_moved.py on it for both files:
# the check as a user runs it. NAME (default light; the second was light2, run because the
# first's verdict rested on two disturbed runs; light3 and light4 are run2.sh's) names the folder
# and the reports; after light2 the first two are judged pooled too (out/moved-*-on-light-pooled.md).
# Run:  sh docs/results/calibration/round28/light.sh [NAME]
set -e
N=${1:-light}
P=$PWD/.venv/bin/python; D=$PWD/docs/results/calibration/round28; R=$PWD/docs/results/calibration
export PATH=$PWD/.venv/bin:$PATH
date -u > /tmp/r28/$N.times
lanes bench run examples/experiments/calibration-light.toml --out /tmp/r28/$N
(cd bench/calibrate && $P timelines.py /tmp/r28/$N)
date -u >> /tmp/r28/$N.times
K=$D/$N; for v in fifo sjf independent default; do mkdir -p $K/runs/$v; cp /tmp/r28/$N/runs/$v/L*-r?.json $K/runs/$v/; done
cp /tmp/r28/$N/plan.json /tmp/r28/$N/summary.json /tmp/r28/$N/timelines.json $K/
mkdir -p $D/out
cd bench/calibrate
$P host_moved.py $K --markdown $D/out/moved-new-on-$N.md > /dev/null || true
$P host_moved.py $K --scenario $R/round26/scenarios/committed.toml --reference $R/round21/grid-seed1 \
  --markdown $D/out/moved-old-on-$N.md > /dev/null || true
if [ "$N" = light2 ]; then
  $P host_moved.py $D/light $K --markdown $D/out/moved-new-on-light-pooled.md > /dev/null || true
  $P host_moved.py $D/light $K --scenario $R/round26/scenarios/committed.toml \
    --reference $R/round21/grid-seed1 --markdown $D/out/moved-old-on-light-pooled.md > /dev/null || true
fi
date -u >> /tmp/r28/$N.times
