#!/bin/sh
# The twenty-fourth round's readings, from the repository root (2026-11-29): no new grid; the
# eight grids of rounds 22 and 23 (480 runs, their run timelines kept under /tmp/r22 and
# /tmp/r23; the committed copies hold the run files and timelines.json, which spells.py's per-run
# part and lane.py's part 2 read).
# 1. the host's speed where nothing queues, per run and per second (spells.py);
# 2. what runs away near the knee (lane.py);
# 3. the committed scenario, and it with speed processes of those scales (scenarios/, each
#    cpu-2core.toml with host.speed_cv and host.speed_ms added), against the eight grids pooled
#    and grid by grid, as a long run (3 seeds x 40,000 requests) and as 200 windows as long as
#    the lab's (against_demo.py --windows, new this round).
set -e
P=$PWD/.venv/bin/python; D=$PWD/docs/results/calibration/round24; O=$D/out
mkdir -p $O
G22="/tmp/r22/grid-seed23 /tmp/r22/grid-seed37 /tmp/r22/grid-seed53 /tmp/r22/grid-seed71 /tmp/r22/grid-seed89"
G23="/tmp/r23/grid-seed101 /tmp/r23/grid-seed103 /tmp/r23/grid-seed107"
$P $D/spells.py $G22 $G23 > $O/spells.txt
$P $D/lane.py $G22 $G23 > $O/lane.txt
C=$PWD/examples/scenarios/cpu-2core.toml
# the scenarios: cpu-2core.toml as committed, plus a speed process
for s in run-0.042-10000 second-0.05-1400 second-0.06-1400 second-0.07-2800 second-0.05-700 second-0.07-700; do
  cv=$(echo $s | cut -d- -f2); ms=$(echo $s | cut -d- -f3)
  sed "s/^call_stretch = .*/&\nspeed_cv = $cv\nspeed_ms = $ms.0/" $C > $D/scenarios/spells-$s.toml
done
cd bench/calibrate
for sc in $C $D/scenarios/spells-*.toml; do
  n=$(basename $sc .toml)
  $P against_demo.py $G22 $G23 --grid --scenario $sc --markdown $O/$n-pooled-long.md > /dev/null
  $P against_demo.py $G22 $G23 --grid --scenario $sc --windows 200 --markdown $O/$n-pooled-windows.md > /dev/null
done
for sc in $C $D/scenarios/spells-run-0.042-10000.toml $D/scenarios/spells-second-0.05-1400.toml; do
  n=$(basename $sc .toml)
  for g in $G22 $G23; do
    $P against_demo.py $g --grid --scenario $sc --windows 200 --markdown $O/$n-on-$(basename $g)-windows.md > /dev/null
  done
done
cd $D/out
$P ../../round22/count.py *-pooled-long.md *-pooled-windows.md > counts.txt
for sc in cpu-2core spells-run-0.042-10000 spells-second-0.05-1400; do
  echo "$sc, 200 windows, grid by grid: $($P ../../round22/count.py $sc-on-*-windows.md | awk '{s += $2} END {print s}') of 480" >> counts.txt
done
# 4. part 5: the two grids run with the speed probe (run.sh): the probe against the calls, the
#    calls' speed on that hour, the committed scenario against each and pooled, the lab itself
cd $D/../../../..
$P $D/probe.py /tmp/r24/grid-seed109 /tmp/r24/grid-seed113 > $O/probe.txt
$P $D/spells.py /tmp/r24/grid-seed109 /tmp/r24/grid-seed113 > $O/spells-round24.txt
cd bench/calibrate
for s in 109 113; do
  $P against_demo.py /tmp/r24/grid-seed$s --grid --markdown $O/cpu-2core-on-grid-seed$s.md > /dev/null
  $P against_demo.py /tmp/r24/grid-seed$s --grid --windows 200 --markdown $O/cpu-2core-on-grid-seed$s-windows.md > /dev/null
done
$P against_demo.py /tmp/r24/grid-seed109 /tmp/r24/grid-seed113 --grid --markdown $O/cpu-2core-on-round24-pooled.md > /dev/null
$P self_check.py /tmp/r24/grid-seed109 --predicts /tmp/r24/grid-seed113 --markdown $O/lab-109-on-113.md > /dev/null
$P self_check.py /tmp/r24/grid-seed113 --predicts /tmp/r24/grid-seed109 --markdown $O/lab-113-on-109.md > /dev/null
