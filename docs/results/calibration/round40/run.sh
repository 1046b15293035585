#!/bin/sh
# The fortieth round, every command in the order it ran, from the repository root
# (docs/results/calibration.md, "The fortieth round"). The traces of round 38's two grids were
# kept in /tmp/r38 (round38/run.sh, step 1); the committed copies carry no traces.
set -e
D=$PWD/docs/results/calibration/round40; R=$PWD/docs/results/calibration; P=$PWD/.venv/bin/python
FILE=$R/round27/scenarios/seed157-reading.toml
mkdir -p $D/out
# 1. Each grid's fifo, sjf and independent runs at 400 and 600 req/s taken apart by tails.py
#    (the request's batcher wait, device queue, device hold and call, rebuilt from the device
#    timeline), beside the simulator on the file scaled to the grid's hour against grid 157.
for g in 221 223; do
  for v in fifo sjf independent; do
    (cd bench/calibrate && PYTHONPATH=. $P tails.py /tmp/r38/grid-seed$g --variant $v \
      --rates 400,600 --scenario $FILE --hour-speed $R/round27/grid-seed157 --sim --seeds 3 \
      --markdown $D/out/tails-$g-$v.md > /dev/null)
  done
done
# 2. The parts, simulator over lab, pooled over the two grids and grid by grid.
$P $D/parts.py $D/out/tails-*.md > $D/out/parts.md
for g in 221 223; do $P $D/parts.py $D/out/tails-$g-*.md > $D/out/parts-$g.md; done
