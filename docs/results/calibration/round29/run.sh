#!/bin/sh
# The twenty-ninth round's lab work, from the repository root, under the lab lock (2026-12-02):
# the check first, as a user runs it: two light grids back to back (light1, light2:
# examples/experiments/calibration-light.toml, the lowest level alone); then the truth: a grid on
# arrival seed 193 with threads.py at 600 req/s and sched.py at 200 and 600 req/s (fifo, sjf)
# beside it, for a same-hour reading as round 27's run.sh had; a grid on seed 197 to judge it;
# and a light grid again (light3). Committed copies: run files, plan, summary, timelines.json.
set -e
P=$PWD/.venv/bin/python; D=docs/results/calibration/round29
export PATH=$PWD/.venv/bin:$PATH
mkdir -p /tmp/r29/threads /tmp/r29/sched
keep() {  # keep NAME: the committed copy of /tmp/r29/NAME (no request traces)
  G=/tmp/r29/$1; K=$D/$1
  for v in fifo sjf independent default; do mkdir -p $K/runs/$v; cp $G/runs/$v/L*-r?.json $K/runs/$v/; done
  cp $G/plan.json $G/summary.json $G/timelines.json $K/
}
grid() {  # grid NAME EXPERIMENT
  lanes bench run $2 --out /tmp/r29/$1
  (cd bench/calibrate && $P timelines.py /tmp/r29/$1)
  date -u >> /tmp/r29/run.times
  keep $1
}
date -u > /tmp/r29/run.times
grid light1 examples/experiments/calibration-light.toml
grid light2 examples/experiments/calibration-light.toml
grid grid-seed193 $D/experiment-seed193.toml
(cd bench/calibrate && $P threads.py /tmp/r29/grid-seed193/corpus 600 > /tmp/r29/threads/600.md &&
  $P sched.py /tmp/r29/grid-seed193/corpus --policy fifo --rates 200,600 --out /tmp/r29/sched/fifo.json > /dev/null &&
  $P sched.py /tmp/r29/grid-seed193/corpus --policy sjf --rates 200,600 --out /tmp/r29/sched/sjf.json > /dev/null)
date -u >> /tmp/r29/run.times
grid grid-seed197 $D/experiment-seed197.toml
grid light3 examples/experiments/calibration-light.toml
