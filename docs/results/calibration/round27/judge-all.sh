#!/bin/sh
# The twenty-seventh round's judgements (from the repository root, after run.sh and read.sh):
# the capped stretch as fixed this round (round 26's capped.toml: the file of 2026-11-29 with
# call_stretch_capped) on every grid; the file of 2026-11-29 on the new grids; round 26's reading
# of grid 149 on this round's grids; this round's reading of grid 157 (cpu-2core.toml since) on
# every grid, each against the grid it was read off as the hour's reference.
set -e
D=docs/results/calibration
sh $D/round27/judge.sh $D/round26/scenarios/capped.toml capped2
ROUNDS="26b 27" sh $D/round27/judge.sh $D/round26/scenarios/committed.toml committed
ROUNDS=27 sh $D/round27/judge.sh $D/round26/scenarios/seed149-reading.toml seed149-reading $D/round26/grid-seed149
sh $D/round27/judge.sh $D/round27/scenarios/seed157-reading.toml seed157-reading $D/round27/grid-seed157
(cd bench/calibrate && PYTHONPATH=. ../../.venv/bin/python default_question.py \
  --markdown ../../$D/round27/out/default-question.md > /dev/null)
date -u
