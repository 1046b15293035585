#!/bin/sh
# The twenty-second round, part 6 (after read-53.sh and read-2.sh), from the repository root
# (2026-11-29): seed 53's grid read the same hour as read-53.sh read it, with the ninth round's
# measured stretch of independent's calls as well (same_hour.py --call-stretch lossy:
# host.call_stretch = [1.0, 1.25, 1.18, 1.05], variants.py's STRETCH); that scenario and round
# 21's seed-1 reading with the same stretch set as they are against each grid and the grids
# pooled; the stretch measured again on the hour's four grids (stretch.py); and issue 15's
# default question on the stretched reading.
set -e
ROOT=$PWD; D=$ROOT/docs/results/calibration/round22; P="nice -n 19 $ROOT/.venv/bin/python"
R21=$ROOT/docs/results/calibration/round21; O=$D/out
cd $ROOT/bench/calibrate
$P same_hour.py /tmp/r22/read53 /tmp/r22/read53-waits.json --busy-wakes --deconvolved \
  --against /tmp/r22/grid-seed53 \
  --scenario $ROOT/docs/results/calibration/round20/cpu-2core-2026-11-26.toml \
  --call-cpu --server-cpu --absorbed --call-stretch lossy \
  --markdown $O/seed53-stretch-same-hour.md \
  --write $D/scenarios/seed53-cpu-server-absorbed-stretch.toml > /dev/null
PYTHONPATH=. $P $D/with_keys.py $R21/scenarios/seed1-cpu-server-absorbed.toml \
  $D/scenarios/r21-seed1-stretch.toml "call_stretch=[1.0, 1.25, 1.18, 1.05]"
HOUR="/tmp/r22/grid-seed37 /tmp/r22/grid-seed53 /tmp/r22/grid-seed71 /tmp/r22/grid-seed89"
for name in seed53-stretch r21-seed1-stretch; do
  case $name in
    seed53-stretch) S=$D/scenarios/seed53-cpu-server-absorbed-stretch.toml ;;
    r21-seed1-stretch) S=$D/scenarios/r21-seed1-stretch.toml ;;
  esac
  for s in 23 37 53 71 89; do
    $P against_demo.py /tmp/r22/grid-seed$s --grid --scenario $S --markdown $O/$name-on-seed$s.md > /dev/null
  done
  $P against_demo.py /tmp/r22/grid-seed23 $HOUR --grid --scenario $S --markdown $O/$name-pooled-all.md > /dev/null
  $P against_demo.py $HOUR --grid --scenario $S --markdown $O/$name-pooled-hour.md > /dev/null
done
$P against_demo.py $HOUR --grid --scenario $D/scenarios/seed53-cpu-server-absorbed.toml \
  --markdown $O/seed53-reading-pooled-hour.md > /dev/null
$P against_demo.py $HOUR --grid --scenario $R21/scenarios/seed1-cpu-server-absorbed.toml \
  --markdown $O/r21-seed1-reading-pooled-hour.md > /dev/null
$P $D/count.py $O/*stretch*.md $O/*pooled-hour.md > $O/stretch.txt
PYTHONPATH=. $P $D/with_keys.py $D/scenarios/seed53-cpu-server-absorbed-stretch.toml \
  $D/scenarios/seed53-stretch-weighted.toml call_stretch_weighted=true
for s in 37 53 71 89; do
  $P against_demo.py /tmp/r22/grid-seed$s --grid --scenario $D/scenarios/seed53-stretch-weighted.toml \
    --markdown $O/seed53-stretch-weighted-on-seed$s.md > /dev/null
done
$P $D/count.py $O/seed53-stretch-weighted-on-seed*.md >> $O/stretch.txt
PYTHONPATH=. $P $D/stretch.py $HOUR > $O/stretch-today.md
$P default_question.py --scenario $D/scenarios/seed53-cpu-server-absorbed-stretch.toml \
  --markdown $D/default-question-seed53-stretch.md > /dev/null
date -u
