#!/bin/sh
# The twenty-third round's readings, from the repository root (2026-11-29), after run.sh:
# the lab against itself across the three new grids and the committed scenario against them,
# each with and without the runs the host disturbed; then round 22's five grids with their host
# noise estimated (estimate.py), the committed scenario pooled over them with and without; then
# the stretch (below), which this round took into cpu-2core.toml.
set -e
P=$PWD/.venv/bin/python; D=$PWD/docs/results/calibration/round23; O=$D/out
mkdir -p $O
# the file committed as cpu-2core.toml when these ran (round 21's seed-1 reading)
C="--scenario $D/../round21/scenarios/seed1-cpu-server-absorbed.toml"
cd bench/calibrate
for a in 101 103 107; do
  for b in 101 103 107; do
    [ $a = $b ] && continue
    $P self_check.py /tmp/r23/grid-seed$a --predicts /tmp/r23/grid-seed$b --markdown $O/lab-$a-on-$b.md > /dev/null
    $P self_check.py /tmp/r23/grid-seed$a --predicts /tmp/r23/grid-seed$b --without-disturbed --markdown $O/lab-$a-on-$b-quiet.md > /dev/null
  done
done
for s in 101 103 107; do
  $P against_demo.py /tmp/r23/grid-seed$s --grid $C --markdown $O/committed-on-seed$s.md > /dev/null
done
$P against_demo.py /tmp/r23/grid-seed101 /tmp/r23/grid-seed103 /tmp/r23/grid-seed107 --grid $C --markdown $O/committed-pooled.md > /dev/null
$P against_demo.py /tmp/r23/grid-seed101 --grid $C --without-disturbed --markdown $O/committed-on-seed101-quiet.md > /dev/null
$P against_demo.py /tmp/r23/grid-seed101 /tmp/r23/grid-seed103 /tmp/r23/grid-seed107 --grid $C --without-disturbed --markdown $O/committed-pooled-quiet.md > /dev/null
PYTHONPATH=. $P $D/estimate.py /tmp/r23/est /tmp/r22/grid-seed23 /tmp/r22/grid-seed37 /tmp/r22/grid-seed53 /tmp/r22/grid-seed71 /tmp/r22/grid-seed89 > $O/estimate-r22.txt
E=/tmp/r23/est
$P against_demo.py $E/grid-seed23 $E/grid-seed37 $E/grid-seed53 $E/grid-seed71 $E/grid-seed89 --grid $C --markdown $O/committed-r22-pooled.md > /dev/null
$P against_demo.py $E/grid-seed23 $E/grid-seed37 $E/grid-seed53 $E/grid-seed71 $E/grid-seed89 --grid $C --without-disturbed --markdown $O/committed-r22-pooled-quiet.md > /dev/null
# round 22's stretched scenarios (the ninth round's host.call_stretch) and the same hour's
# reading without and with it, against the new grids
for sc in r21-seed1-stretch seed53-cpu-server-absorbed-stretch seed53-stretch-weighted seed53-cpu-server-absorbed; do
  for s in 101 103 107; do
    $P against_demo.py /tmp/r23/grid-seed$s --grid --scenario $D/../round22/scenarios/$sc.toml --markdown $O/$sc-on-seed$s.md > /dev/null
  done
  $P against_demo.py /tmp/r23/grid-seed101 /tmp/r23/grid-seed103 /tmp/r23/grid-seed107 --grid --scenario $D/../round22/scenarios/$sc.toml --markdown $O/$sc-pooled.md > /dev/null
done
# the eight grids of rounds 22 and 23 pooled: the reading committed until now, the ninth round's
# stretch and round 22's re-measured stretch (round23/scenarios/r21-seed1-stretch-today.toml),
# each grid alone with the last; then the stretch measured again on the new grids
G22="/tmp/r22/grid-seed23 /tmp/r22/grid-seed37 /tmp/r22/grid-seed53 /tmp/r22/grid-seed71 /tmp/r22/grid-seed89"
G23="/tmp/r23/grid-seed101 /tmp/r23/grid-seed103 /tmp/r23/grid-seed107"
$P against_demo.py $G22 $G23 --grid --scenario $D/../round21/scenarios/seed1-cpu-server-absorbed.toml --markdown $O/committed-pooled-8.md > /dev/null
$P against_demo.py $G22 $G23 --grid --scenario $D/../round22/scenarios/r21-seed1-stretch.toml --markdown $O/r21-seed1-stretch-pooled-8.md > /dev/null
SC=$D/scenarios/r21-seed1-stretch-today.toml
for g in $G22 $G23; do
  $P against_demo.py $g --grid --scenario $SC --markdown $O/r21-seed1-stretch-today-on-$(basename $g).md > /dev/null
done
$P against_demo.py $G22 $G23 --grid --scenario $SC --markdown $O/r21-seed1-stretch-today-pooled-8.md > /dev/null
$P against_demo.py $G23 --grid --scenario $SC --markdown $O/r21-seed1-stretch-today-pooled.md > /dev/null
PYTHONPATH=. $P $D/../round22/stretch.py $G23 > $O/stretch-r23.md
$P default_question.py --scenario $D/../round22/scenarios/r21-seed1-stretch.toml --markdown $O/default-question-r21-stretch.md > /dev/null
# the default question on the file committed this round (cpu-2core.toml = r21-seed1-stretch-today)
$P default_question.py --markdown $D/default-question.md > /dev/null
$P $D/../round22/count.py $O/*.md | grep -v " 0 of 0 " > $O/counts.txt
# the simulator's p99 per 5 s window against the lab's runs, pooled over the eight grids
(PYTHONPATH=. $P $D/window.py $G22 $G23 > $O/window.md)
# what the runaway runs share: the seven grids of the usual speed, then all eight
$P $D/runaway.py $G22 $G23 > $O/runaway-with-23.txt
$P $D/runaway.py /tmp/r22/grid-seed37 /tmp/r22/grid-seed53 /tmp/r22/grid-seed71 /tmp/r22/grid-seed89 $G23 > $O/runaway.txt
