#!/bin/sh
# The twenty-second round, part 5, from the repository root (2026-11-29), under the lab lock:
# where the seed-53 reading misses at the fast hour (grids 37 and 53), read (policy_cpu.py,
# call_walls.py, idle.py, tail_parts.py, batch_sizes.py), and the simulator's existing rules for
# how the cores are shared tried as scratch readings on it (with_keys.py), each set against the
# seed-53 and seed-37 grids (2 seeds x 30,000 requests), and per_policy.py's scenario per policy
# on the four grids of the later hour. None was taken.
set -e
ROOT=$PWD; D=$ROOT/docs/results/calibration/round22; O=$D/out; T=/tmp/r22/try
P="nice env PYTHONPATH=$ROOT/bench/calibrate $ROOT/.venv/bin/python"; S=$D/scenarios/seed53-cpu-server-absorbed.toml
FAST="/tmp/r22/grid-seed53 /tmp/r22/grid-seed37"
mkdir -p $T
cd $ROOT/bench/calibrate
$P $D/policy_cpu.py /tmp/r22/grid-seed23 $FAST /tmp/r22/grid-seed71 /tmp/r22/grid-seed89 > $O/policy-cpu.md
for v in independent default fifo; do $P $D/call_walls.py $S $v $FAST > $O/call-walls-$v.md; done
$P $D/idle.py $S $FAST > $O/idle.md
for l in L1 L2; do $P $D/tail_parts.py $l line_rnn_zh $FAST > $O/tail-parts-zh-$l.md; done
$P batch_sizes.py /tmp/r22/grid-seed53 --scenario $S --model line_rnn_zh \
  --variants independent,fifo --rates 600,800 --markdown $O/batch-sizes-zh-53.md > /dev/null
W="$P $D/with_keys.py $S"
$W $T/base.toml
$W $T/slice1.5.toml slice_ms=1.5
$W $T/slice3.toml slice_ms=3.0
$W $T/lag1.toml lag_ms=1.0
$W $T/lag5.toml lag_ms=5.0
$W $T/lag3calls.toml lag_ms=3.0 lag_among_calls=true
$W $T/rq.toml run_queues=true
$W $T/cold.toml 'char_cnn*1.2' 'line_rnn_en*1.04' 'line_rnn_zh*1.02'
$W $T/rqcold.toml run_queues=true 'char_cnn*1.2' 'line_rnn_en*1.04' 'line_rnn_zh*1.02'
rm -f $O/tried.txt
for n in base slice1.5 slice3 lag1 lag5 lag3calls rq cold rqcold; do
  for g in 53 37; do
    $P against_demo.py /tmp/r22/grid-seed$g --grid --scenario $T/$n.toml --seeds 2 \
      --requests 30000 --markdown $O/tried-$n-on-$g.md > /dev/null
  done
done
# the dearer calls for independent and the default only (per_policy.py), on all four grids of
# the later hour
$W $T/cold-own.toml 'char_cnn*1.2' 'line_rnn_en*1.04' 'line_rnn_zh*1.02'
for g in 71 89; do
  $P against_demo.py /tmp/r22/grid-seed$g --grid --scenario $T/base.toml --seeds 2 \
    --requests 30000 --markdown $O/tried-base-on-$g.md > /dev/null
done
for g in 53 37 71 89; do
  $P $D/per_policy.py $S $T/cold-own.toml /tmp/r22/grid-seed$g > $O/tried-per-policy-on-$g.md
done
$P $D/count.py $O/tried-*-on-*.md > $O/tried.txt
date -u
