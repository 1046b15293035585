#!/bin/sh
# The forty-first round's reading of its own hour, from the repository root, after lab.sh 227 and
# 229, under the lab lock: grid 227 read as round 27's read.sh read grid 157 (threads.py at
# 600 req/s and sched.py at 200 and 600 req/s on its corpus, spans.py, same_hour.py with the
# committed file's flags, then the committed file's call stretch and speed process), and the
# reading judged on the hour's other grid (229), on its own and on both pooled, unscaled (it is
# the hour's own reading), beside the committed file scaled to the hour.
set -e
ROOT=$PWD; P=$ROOT/.venv/bin/python; D=$ROOT/docs/results/calibration/round41; O=$D/out/read
A=/tmp/r41/grid-seed227; R=/tmp/r41/read
OLD=$ROOT/docs/results/calibration/round20/cpu-2core-2026-11-26.toml
export PATH=$ROOT/.venv/bin:$PATH
mkdir -p $R/runs $R/threads $R/sched $D/scenarios $O/capacity $O/other-hours
for f in corpus experiment.toml plan.json summary.json timelines.json; do ln -sfn $A/$f $R/$f; done
for v in fifo sjf independent; do ln -sfn $A/runs/$v $R/runs/$v; done
cd $ROOT/bench/calibrate
export PYTHONPATH=.
$P threads.py $A/corpus 600 > $R/threads/600.md
$P sched.py $A/corpus --policy fifo --rates 200,600 --out $R/sched/fifo.json > /dev/null
$P sched.py $A/corpus --policy sjf --rates 200,600 --out $R/sched/sjf.json > /dev/null
$P spans.py $R --json $R/waits.json > /dev/null
$P same_hour.py $R $R/waits.json --busy-wakes --deconvolved --against $D/grid-seed227 \
  --scenario $OLD --call-cpu --server-cpu --absorbed --markdown $O/seed227-same-hour.md \
  --write $R/seed227-read.toml > /dev/null
sed -e 's/^call_preempt_absorbed = true$/call_preempt_absorbed = true\ncall_stretch = [1.0, 1.25, 1.16, 1.0]\nspeed_cv = 0.1\nspeed_ms = 250.0/' \
  $R/seed227-read.toml > $D/scenarios/seed227-reading.toml
grep -q '^speed_cv = 0.1$' $D/scenarios/seed227-reading.toml
S=$D/scenarios/seed227-reading.toml
$P against_demo.py $D/grid-seed229 --grid --scenario $S --windows 100 \
  --markdown $O/reading-on-grid-seed229.md > /dev/null
$P against_demo.py $D/grid-seed227 --grid --scenario $S --windows 100 \
  --markdown $O/reading-on-grid-seed227.md > /dev/null
$P against_demo.py $D/grid-seed227 $D/grid-seed229 --grid --scenario $S --windows 100 \
  --markdown $O/reading-pooled.md > /dev/null
$P $ROOT/docs/results/calibration/round22/count.py $O/*.md > $O/counts.txt
# The same three up to the lab's capacity at SLO (round 39's knee).
for g in 227 229; do
  $P against_demo.py $D/grid-seed$g --grid --scenario $S --windows 100 --knee capacity \
    --markdown $O/capacity/reading-on-grid-seed$g.md > /dev/null
done
$P against_demo.py $D/grid-seed227 $D/grid-seed229 --grid --scenario $S --windows 100 \
  --knee capacity --markdown $O/capacity/reading-pooled.md > /dev/null
$P $ROOT/docs/results/calibration/round22/count.py $O/capacity/*.md > $O/capacity/counts.txt
# The reading on the other hours of this host (the sixteen grids of rounds 25-29 and 38 that
# round 41's pairs judge), scaled to each hour against grid 227, beside the committed file's
# counts there (scaled against grid 157).
cd $ROOT
R=$ROOT/docs/results/calibration
OLD16=$(D=$R/round29; . $R/round29/grids.sh; echo $R25 $R26 $R26b $R27 $R27b $R28 $R29)
GRIDS="$OLD16 $R/round38/grid-seed221 $R/round38/grid-seed223" OUT=$O/other-hours \
  REF=$D/grid-seed227 sh $R/round34/judge_intel.sh reading=$S > $O/other-hours/counts.txt
