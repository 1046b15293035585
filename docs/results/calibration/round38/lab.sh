#!/bin/sh
# The thirty-eighth round's lab grid, from the repository root, under the lab lock: round 37's
# experiment and lab.sh on arrival seed S (the argument: 221, the default, or 223), request
# traces kept in /tmp/r38/grid-seedS; committed copy: run files, plan, summary,
# timelines.json (no traces).
ROUND_DIR=docs/results/calibration/round38 TRACES=/tmp/r38 \
  exec sh docs/results/calibration/round37/lab.sh "${1:-221}"
