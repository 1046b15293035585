#!/bin/sh
# The twenty-first round's other readings, from the repository root (2026-11-29), after read.sh:
# a host speed drawn once per run (speed_cv 0.03-0.07 with epochs far longer than a run, 12
# seeds) on round 19's grid, and the simulator's p99 as the lab measures it (windowed.py).
set -e
ROOT=$PWD; D=$ROOT/docs/results/calibration/round21; P="nice $ROOT/.venv/bin/python"
S=$ROOT/docs/results/calibration/round20/scenarios/r19-cpu-server-absorbed.toml; O=$D/out
cd $ROOT/bench/calibrate
for cv in 0 0.03 0.05 0.07; do
  f=$D/scenarios/r19-run-speed-$cv.toml
  if [ $cv = 0 ]; then cp $S $f; else
    sed "s/^\[host\]$/[host]\nspeed_cv = $cv\nspeed_ms = 1000000000.0/" $S > $f; fi
  $P against_demo.py /tmp/r19/grid --grid --scenario $f --seeds 12 \
    --markdown $O/run-speed-$cv-on-r19.md > /dev/null
done
PYTHONPATH=. $P $D/windowed.py $S > $O/windowed-r19.md
