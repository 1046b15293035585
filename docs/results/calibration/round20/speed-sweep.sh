#!/bin/sh
# The twentieth round's diagnostic (not a reading: these figures are not measured), from the
# repository root: the committed cpu-2core.toml with the host's speed process (host.speed_cv,
# host.speed_ms) set by hand over a grid, set as it is against rounds 18 and 19's grids, to see what
# a slow-spell process would need to be to bring the tails near the knee in. host_speed.py measures
# cv 0.076-0.088 with epochs of 75-106 ms on rounds 18-20's grids.
set -e
ROOT=$PWD; D=$ROOT/docs/results/calibration/round20; P="nice $ROOT/.venv/bin/python"; T=/tmp/r20/speed
mkdir -p $T; cd $ROOT/bench/calibrate
for g in 18 19; do $P against_demo.py /tmp/r$g/grid --grid --markdown $T/base-on-r$g.md > /dev/null; done
for ms in 100 500 2000; do for cv in 0.05 0.1 0.2; do
  sed "s/^time_slicing = true/time_slicing = true\nspeed_cv = $cv\nspeed_ms = $ms/" \
    $ROOT/examples/scenarios/cpu-2core.toml > $T/s-$ms-$cv.toml
  for g in 18 19; do
    $P against_demo.py /tmp/r$g/grid --grid --scenario $T/s-$ms-$cv.toml --markdown $T/s-$ms-$cv-on-r$g.md > /dev/null
  done
done; done
for g in 18 19; do
  PYTHONPATH=. $P $ROOT/docs/results/calibration/round16/noise.py /tmp/r$g/grid $T/base-on-r$g.md \
    $T/s-*-on-r$g.md
done > $D/out/speed-sweep.txt
