#!/bin/sh
# The twenty-second round, part 3 (after run2.sh), from the repository root (2026-11-29), under
# the lab lock: gaps.py on the seed-71 and seed-89 grids; the seed-53 reading, the committed
# cpu-2core.toml (round 19's reading, as committed then), round 21's seed-1 reading and the seed-23
# reading set as they are against each and against all five grids pooled; and the lab predicting itself across grids (self_check.py --predicts) for every
# ordered pair of the five, and each grid's leave-one-out ceiling.
set -e
ROOT=$PWD; D=$ROOT/docs/results/calibration/round22; P="nice $ROOT/.venv/bin/python"
R21=$ROOT/docs/results/calibration/round21; O=$D/out
SEEDS="23 37 53 71 89"
for s in 71 89; do
  G=/tmp/r22/grid-seed$s; K=$D/grid-seed$s
  $P $R21/gaps.py $G | tail -1 | sed "s/^/seed $s: /" >> $O/gaps.txt
  for v in fifo sjf independent default; do mkdir -p $K/runs/$v; cp $G/runs/$v/L*-r?.json $K/runs/$v/; done
  cp $G/plan.json $G/summary.json $G/timelines.json $K/
done
cd $ROOT/bench/calibrate
ALL=""; for s in $SEEDS; do ALL="$ALL /tmp/r22/grid-seed$s"; done
for name in seed53-reading committed r21-seed1-reading; do
  case $name in
    seed53-reading) S=$D/scenarios/seed53-cpu-server-absorbed.toml ;;
    committed) S=$ROOT/docs/results/calibration/round20/scenarios/r19-cpu-server-absorbed.toml ;;  # cpu-2core.toml until 09:15 UTC
    r21-seed1-reading) S=$R21/scenarios/seed1-cpu-server-absorbed.toml ;;
  esac
  for s in 71 89; do
    $P against_demo.py /tmp/r22/grid-seed$s --grid --scenario $S --markdown $O/$name-on-seed$s.md > /dev/null
  done
  $P against_demo.py $ALL --grid --scenario $S --markdown $O/$name-pooled-all.md > /dev/null
done
S=$D/scenarios/seed23-cpu-server-absorbed.toml
for s in 71 89; do
  $P against_demo.py /tmp/r22/grid-seed$s --grid --scenario $S --markdown $O/seed23-reading-on-seed$s.md > /dev/null
done
$P against_demo.py $ALL --grid --scenario $S --markdown $O/seed23-reading-pooled-all.md > /dev/null
for a in $SEEDS; do
  $P self_check.py /tmp/r22/grid-seed$a > $O/self-check-seed$a.md
  for b in $SEEDS; do
    [ $a = $b ] && continue
    $P self_check.py /tmp/r22/grid-seed$a --predicts /tmp/r22/grid-seed$b \
      --markdown $O/self-$a-predicts-$b.md > /dev/null
  done
done
# two grids on each side: does pooling raise the lab's ceiling?
$P self_check.py /tmp/r22/grid-seed37 /tmp/r22/grid-seed53 --predicts /tmp/r22/grid-seed71 \
  /tmp/r22/grid-seed89 --markdown $O/self-37-53-predicts-71-89.md > /dev/null
$P self_check.py /tmp/r22/grid-seed71 /tmp/r22/grid-seed89 --predicts /tmp/r22/grid-seed37 \
  /tmp/r22/grid-seed53 --markdown $O/self-71-89-predicts-37-53.md > /dev/null
for name in seed53-reading r21-seed1-reading; do
  case $name in
    seed53-reading) S=$D/scenarios/seed53-cpu-server-absorbed.toml ;;
    r21-seed1-reading) S=$R21/scenarios/seed1-cpu-server-absorbed.toml ;;
  esac
  $P against_demo.py /tmp/r22/grid-seed71 /tmp/r22/grid-seed89 --grid --scenario $S \
    --markdown $O/$name-on-71-89-pooled.md > /dev/null
done
date -u
