#!/bin/sh
# The forty-first round's lab grid, from the repository root, under the lab lock: round 37's
# lab.sh on this round's experiment (round 38's with 10 repeats a level) on arrival seed S (the
# argument: 227, the default, or 229), request traces kept in /tmp/r41/grid-seedS; committed
# copy: run files, plan, summary, timelines.json (no traces).
ROUND_DIR=docs/results/calibration/round41 TRACES=/tmp/r41 \
  exec sh docs/results/calibration/round37/lab.sh "${1:-227}"
