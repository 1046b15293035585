#!/bin/sh
# The twenty-seventh round's readings (from the repository root, after run.sh, 2026-12-02):
# 1. the seed-157 grid read the way cpu-2core.toml was read off round 21's seed-1 grid (as round
#    26's read3.sh read grid 149), given the committed stretch and speed process;
# 2. the hour's host laid on the committed file (overlay.py): the parts a reading of the hour
#    changes beside the calls' CPU, alone and together, for both of today's steady hours (grid 149
#    of round 26's reading, grid 157 of this one's);
# 3. each set against the other grid of its hour (151, 163) and both pooled, the committed costs
#    scaled to the hour (against_demo.py --hour-speed, round 21's seed-1 grid, which the committed
#    file was read off).
set -e
ROOT=$PWD; P=$ROOT/.venv/bin/python; D=$ROOT/docs/results/calibration/round27; O=$D/out
R26=$ROOT/docs/results/calibration/round26
REF=$ROOT/docs/results/calibration/round21/grid-seed1
COMMITTED=$R26/scenarios/committed.toml  # cpu-2core.toml as it was until this round
A=/tmp/r27/grid-seed157; B=/tmp/r27/grid-seed163; R=/tmp/r27/read
OLD=$ROOT/docs/results/calibration/round20/cpu-2core-2026-11-26.toml
mkdir -p $R/runs $D/scenarios $O
for f in corpus experiment.toml plan.json summary.json timelines.json; do ln -sfn $A/$f $R/$f; done
for v in fifo sjf independent; do ln -sfn $A/runs/$v $R/runs/$v; done
rm -rf $R/threads $R/sched; cp -r /tmp/r27/threads $R/threads; cp -r /tmp/r27/sched $R/sched
cd $ROOT/bench/calibrate
export PYTHONPATH=.
$P spans.py $R --json /tmp/r27/read-waits.json > /dev/null
$P same_hour.py $R /tmp/r27/read-waits.json --busy-wakes --deconvolved --against $A \
  --scenario $OLD --call-cpu --server-cpu --absorbed --markdown $O/seed157-same-hour.md \
  --write /tmp/r27/seed157-read.toml > /dev/null
sed -e 's/^call_preempt_absorbed = true$/call_preempt_absorbed = true\ncall_stretch = [1.0, 1.25, 1.16, 1.0]\nspeed_cv = 0.1\nspeed_ms = 250.0/' \
  /tmp/r27/seed157-read.toml > $D/scenarios/seed157-reading.toml
grep -q '^speed_cv = 0.1$' $D/scenarios/seed157-reading.toml
# the overlays, for each hour: (reading, the grid it was read off, the other grid)
for hour in "149 $R26/scenarios/seed149-reading.toml $R26/grid-seed149 $R26/grid-seed151" \
            "157 $D/scenarios/seed157-reading.toml $D/grid-seed157 $D/grid-seed163"; do
  set -- $hour
  for parts in host host,preempt host,server host,preempt,server; do
    name=committed-$(echo $parts | tr , -)-$1
    $P $D/overlay.py $COMMITTED $2 --parts $parts --out $D/scenarios/$name.toml
    $P against_demo.py $4 --grid --scenario $D/scenarios/$name.toml --windows 100 --hour-speed $REF \
      --markdown $O/$name-on-$(basename $4).md > /dev/null
    $P against_demo.py $3 $4 --grid --scenario $D/scenarios/$name.toml --windows 100 --hour-speed $REF \
      --markdown $O/$name-pooled.md > /dev/null
  done
  for name in committed seed$1-reading; do
    case $name in committed) C=$COMMITTED; H="--hour-speed $REF";; *) C=$2; H="";; esac
    $P against_demo.py $4 --grid --scenario $C --windows 100 $H --markdown $O/$name-$1-on-$(basename $4).md > /dev/null
    $P against_demo.py $3 $4 --grid --scenario $C --windows 100 $H --markdown $O/$name-$1-pooled.md > /dev/null
  done
  $P self_check.py $3 --predicts $4 --markdown $O/lab-$1-on-$(basename $4).md > /dev/null
  $P self_check.py $4 --predicts $3 --markdown $O/lab-$1-back-on-$(basename $3).md > /dev/null
done
$P $ROOT/docs/results/calibration/round22/count.py $O/*-on-grid-seed151.md $O/*-on-grid-seed163.md $O/*-pooled.md > $O/counts-read.txt
date -u
