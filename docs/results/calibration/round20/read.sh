#!/bin/sh
# The twentieth round's reading (after run.sh), from the repository root (2026-11-29), under the
# lab lock: the best readings of rounds 18 and 19 read off the same hour of the new grid, then
# each written as a scenario file (same_hour.py --write) off three grids of three hours (round
# 18's /tmp/r18/read, round 19's /tmp/r19/read, this round's /tmp/r20/read) and set as it is
# against the grids it was not read off (against_demo.py --grid), beside cpu-2core.toml as
# committed until this round (kept as round20/cpu-2core-2026-11-26.toml, which every reading
# here also takes its other keys from); then round 16's yardsticks on the new grid.
set -e
ROOT=$PWD; D=$ROOT/docs/results/calibration/round20; P="nice $ROOT/.venv/bin/python"
G=/tmp/r20/grid; R=/tmp/r20/read; O=$D/out; OLD=$D/cpu-2core-2026-11-26.toml
mkdir -p $R/runs $O $D/scenarios
for f in corpus experiment.toml plan.json summary.json timelines.json; do ln -sfn $G/$f $R/$f; done
for v in fifo sjf independent; do ln -sfn $G/runs/$v $R/runs/$v; done
rm -rf $R/threads $R/sched; cp -r /tmp/r20/threads $R/threads; cp -r /tmp/r20/sched $R/sched
mkdir -p $D/grid; cp $G/plan.json $G/summary.json $G/timelines.json $D/grid/
for v in fifo sjf independent default; do mkdir -p $D/grid/runs/$v; cp $G/runs/$v/L*-r?.json $D/grid/runs/$v/; done
cp -r /tmp/r20/sched $D/grid/sched; cp /tmp/r20/threads/600.md $D/grid/sched/threads-600.md
cd $ROOT/bench/calibrate
$P spans.py $R --json /tmp/r20/read-waits.json > /tmp/r20/spans.md
# the same hour: round 18's best reading (per-thread CPU, sched.py's preemptions) and round 19's
S="$P same_hour.py $R /tmp/r20/read-waits.json --busy-wakes --deconvolved --against $G --calls --scenario $OLD"
$S --markdown $O/threads.md --write $D/scenarios/r20-threads.toml > /dev/null
$S --call-cpu --server-cpu --absorbed --markdown $O/cpu-server-absorbed.md \
  --write $D/scenarios/r20-cpu-server-absorbed.toml > /dev/null
$S --call-cpu --server-cpu --absorbed --host-speed --markdown $O/cpu-server-absorbed-speed.md \
  --write $D/scenarios/r20-cpu-server-absorbed-speed.toml > /dev/null
$S --call-cpu --server-cpu --absorbed --host-speed-cpu 2,3 \
  --markdown $O/cpu-server-absorbed-kneespeed.md \
  --write $D/scenarios/r20-cpu-server-absorbed-kneespeed.toml > /dev/null
# the earlier hours' grids, read the same two ways and written
for r in 18 19; do
  S="$P same_hour.py /tmp/r$r/read /tmp/r$r/read-waits.json --busy-wakes --deconvolved --scenario $OLD"
  $S --write $D/scenarios/r$r-threads.toml > /dev/null
  $S --call-cpu --server-cpu --absorbed --write $D/scenarios/r$r-cpu-server-absorbed.toml > /dev/null
  $S --call-cpu --server-cpu --absorbed --host-speed \
    --write $D/scenarios/r$r-cpu-server-absorbed-speed.toml > /dev/null
  $S --call-cpu --server-cpu --absorbed --host-speed-cpu 2,3 \
    --write $D/scenarios/r$r-cpu-server-absorbed-kneespeed.toml > /dev/null
done
date -u
# every scenario file as it is against every grid it was not read off, and the committed one
A="$P against_demo.py --grid"
for g in 18 19 20; do
  case $g in 18) GG=/tmp/r18/grid;; 19) GG=/tmp/r19/grid;; 20) GG=$G;; esac
  $A $GG --scenario $OLD --markdown $O/committed-on-r$g.md > /dev/null
  for r in 18 19 20; do
    [ $r = $g ] && continue
    for how in threads cpu-server-absorbed cpu-server-absorbed-speed cpu-server-absorbed-kneespeed; do
      $A $GG --scenario $D/scenarios/r$r-$how.toml --markdown $O/r$r-$how-on-r$g.md > /dev/null
    done
  done
done
date -u
$P self_check.py $G --markdown $O/self-check.md > /dev/null
PYTHONPATH=. $P $ROOT/docs/results/calibration/round16/noise.py $G $O/threads.md \
  $O/cpu-server-absorbed.md $O/committed-on-r20.md $O/r18-threads-on-r20.md \
  $O/r18-cpu-server-absorbed-on-r20.md $O/r19-threads-on-r20.md \
  $O/r19-cpu-server-absorbed-on-r20.md $O/cpu-server-absorbed-speed.md \
  $O/r18-cpu-server-absorbed-speed-on-r20.md $O/r19-cpu-server-absorbed-speed-on-r20.md \
  $O/cpu-server-absorbed-kneespeed.md $O/r18-cpu-server-absorbed-kneespeed-on-r20.md \
  $O/r19-cpu-server-absorbed-kneespeed-on-r20.md > $O/noise.txt
for g in 18 19; do
  PYTHONPATH=. $P $ROOT/docs/results/calibration/round16/noise.py /tmp/r$g/grid \
    $O/committed-on-r$g.md $O/r*-on-r$g.md > $O/noise-r$g.txt
done
cd $ROOT
$P $D/warm.py $G > $O/warm.md
for g in 19 20; do
  $P $D/tails.py /tmp/r$g/grid --rates 200,600,800 > $O/tails-r$g.md
  $P $D/spells.py /tmp/r$g/grid > $O/spells-r$g.md
done
$P docs/results/calibration/round19/windows.py $G > $O/windows.md
date -u
