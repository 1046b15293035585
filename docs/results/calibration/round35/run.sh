#!/bin/sh
# The thirty-fifth round, every command in the order it ran, from the repository root
# (docs/results/calibration.md, "The thirty-fifth round").
set -e
D=docs/results/calibration/round35
export PYTHONPATH=bench/calibrate
# 1. How far each figure moves with the calls' cost, and with the requests' own CPU phases
#    (about 14 minutes each on this host).
for s in calls phases; do
  .venv/bin/python $D/sensitivity.py --scale $s --json $D/out/sensitivity-$s.json \
    --markdown $D/out/sensitivity-$s.md
done
# 2. The same for the other inputs, 30 windows a level, wider multipliers (about 3-4 minutes
#    each): each wait table the file carries, the host's spells and the rest of the host's CPU.
for s in preempts holds client; do
  .venv/bin/python $D/sensitivity.py --windows 30 --scale $s --multipliers 0.5,1,2,4 \
    --json $D/out/sensitivity-$s.json --markdown $D/out/sensitivity-$s.md
done
for s in spells others busy-wakes; do
  .venv/bin/python $D/sensitivity.py --windows 30 --scale $s --multipliers 0.5,1,2,3 \
    --json $D/out/sensitivity-$s.json --markdown $D/out/sensitivity-$s.md
done
# 3. One model's calls at a time: the short model's own, then the two long models'.
.venv/bin/python $D/sensitivity.py --windows 30 --scale calls --only char_cnn \
  --multipliers 0.8,1,1.25 --json $D/out/sensitivity-calls-char_cnn.json \
  --markdown $D/out/sensitivity-calls-char_cnn.md
.venv/bin/python $D/sensitivity.py --windows 30 --scale calls --only line_rnn_zh,line_rnn_en \
  --multipliers 0.8,1,1.25 --json $D/out/sensitivity-calls-line_rnn.json \
  --markdown $D/out/sensitivity-calls-line_rnn.md
# 4. Each model's whole latency distribution, lab against simulator, at 600 and 800 req/s.
.venv/bin/python $D/shape.py > $D/out/shape.md
# 5. The lab's runs one by one (reads out/sensitivity-calls.json from step 1).
.venv/bin/python $D/quiet.py > $D/out/quiet.md
