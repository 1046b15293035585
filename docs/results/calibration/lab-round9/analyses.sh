#!/bin/sh
# The ninth round's analyses, from the repository root, after the grid (/tmp/cal10/grid: the
# traces, 371 MB, are not kept; the run files are in grid/) and the two A/B runs.
set -e
D=docs/results/calibration/lab-round9
cd bench/calibrate
git show 3c4a6b0:examples/scenarios/cpu-2core.toml > /tmp/cpu-2core-before.toml   # handoff_ms 0.371
nice -n 19 ../../.venv/bin/python spans.py /tmp/cal10/grid --markdown ../../$D/spans.md --json ../../$D/waits.json
for g in /tmp/cal10/grid ../../docs/results/calibration/lab-round8 ../../docs/results/calibration/lab-today \
         ../../docs/results/calibration/lab-native /tmp/cal9/grid; do
  for s in /tmp/cpu-2core-before.toml ../../examples/scenarios/cpu-2core.toml; do
    echo "$g $s"
    nice -n 19 ../../.venv/bin/python variants.py $g --scenario $s --only committed | grep '^| committed'
  done
done > ../../$D/variants.txt
nice -n 19 ../../.venv/bin/python compare.py ../../docs/results/calibration/lab-native --seeds 3 \
    --requests 40000 --against /tmp/cal10/grid --markdown ../../$D/compare-committed.md > /dev/null
nice -n 19 ../../.venv/bin/python self_check.py /tmp/cal10/grid --markdown ../../$D/self-check.md > /dev/null
