#!/bin/sh
# The twenty-first round's reading, from the repository root (2026-11-29), on the grids of rounds
# 18, 19 and 20 (/tmp/r18, /tmp/r19, /tmp/r20 as those rounds' run.sh and read.sh left them), with
# the scenario files round 20 wrote off each (round20/scenarios/rNN-cpu-server-absorbed.toml).
# No new lab run: every figure here is read off those grids or simulated.
set -e
ROOT=$PWD; D=$ROOT/docs/results/calibration/round21; P="nice $ROOT/.venv/bin/python"
S20=$ROOT/docs/results/calibration/round20/scenarios; O=$D/out; OLD=$ROOT/docs/results/calibration/round20/cpu-2core-2026-11-26.toml
mkdir -p $O $D/scenarios
cd $ROOT/bench/calibrate
# timelines.json again, now with each cell's mean CPU (cpu_mean_ms) beside its median
for r in 18 19 20; do $P timelines.py /tmp/r$r/grid > /dev/null; done
# 1. each run replayed with its own arrivals and speed
for r in 18 19 20; do
  $P replay.py /tmp/r$r/grid --scenario $S20/r$r-cpu-server-absorbed.toml \
    --variants fifo,sjf,independent,default --rates 400,600,800 --seeds 5 \
    --markdown $O/replay-r$r.md > /dev/null
done
# 2. line_rnn_zh's batch sizes and calls, lab against simulated
for r in 18 19 20; do
  $P batch_sizes.py /tmp/r$r/grid --scenario $S20/r$r-cpu-server-absorbed.toml \
    --model line_rnn_zh --rates 600,800 --markdown $O/sizes-r$r.md > /dev/null
done
# 3. when the lane falls behind, and the host's speed run by run
for r in 18 19 20; do $P $D/instants.py /tmp/r$r/grid L2 > $O/instants-r$r-600.txt; done
PYTHONPATH=. $P $D/speeds.py /tmp/r19/grid > $O/speeds-r19.md
# 4. the burst 0.42-0.7 s into round 19's fifo/L2-r2, call by call, as read and with a lag
sed 's/^\[host\]$/[host]\nlag_ms = 1.0/' $S20/r19-cpu-server-absorbed.toml > $D/scenarios/r19-lag1.toml
for how in r19-cpu-server-absorbed:$S20 r19-lag1:$D/scenarios; do
  name=${how%%:*}; dir=${how#*:}
  for m in line_rnn_zh char_cnn line_rnn_en; do
    $P burst.py /tmp/r19/grid fifo/L2-r2 --scenario $dir/$name.toml --model $m \
      --from 0.42 --to 0.7 --markdown $O/burst-$name-$m.md > /dev/null
  done
done
$P burst.py /tmp/r19/grid fifo/L2-r2 --scenario $S20/r19-cpu-server-absorbed.toml \
  --from 0.0 --to 5.0 --markdown $O/burst-whole-run.md > /dev/null
# 5. the same-hour readings: the costs' means, per level, and a lag
for r in 18 19 20; do
  S="$P same_hour.py /tmp/r$r/read /tmp/r$r/read-waits.json --busy-wakes --deconvolved --scenario $OLD --against /tmp/r$r/grid --call-cpu --server-cpu --absorbed"
  $S --markdown $O/r$r-base.md > /dev/null
  $S --cost-mean --markdown $O/r$r-mean.md > /dev/null
  $S --costs-by-level --markdown $O/r$r-bylevel.md > /dev/null
  $S --costs-by-level --cost-mean --markdown $O/r$r-bylevel-mean.md > /dev/null
  $S --lag 1 --markdown $O/r$r-lag1.md > /dev/null
done
date -u
