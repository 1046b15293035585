#!/bin/sh
# The fourteenth round's analysis, from the repository root (no new lab run; the simulator is
# deterministic): the calls' stretch (host.call_stretch, the ninth round's table) as a loss and
# weighted (host.call_stretch_weighted), against
#  1. the eleventh round's two grids read with the twelfth round's model (same_hour.py; /tmp/r11,
#     /tmp/r11b and their spans.py waits, as the thirteenth round: their traces are not kept),
#  2. the committed scenario against the committed grids (variants.py),
#  3. the committed scenario against the demo with the default policy (against_demo.py).
set -e
D=../../docs/results/calibration/round14
cd bench/calibrate
P="nice ../../.venv/bin/python"
{
  echo "| grid | options | set against | stretch | within 15 % |"
  echo "|---|---|---|---|---:|"
  for g in r11 r11b; do
    o=$([ $g = r11 ] && echo r11b || echo r11)
    for opts in "" "--no-preempt --wall-time"; do
      for against in "" "--against /tmp/$o"; do
        for st in "" "--call-stretch lossy" "--call-stretch weighted"; do
          n=$($P same_hour.py /tmp/$g /tmp/$g-waits.json $opts --busy-wakes --deconvolved $st \
            $against | grep -o '\*\*[0-9]* of 45' | tr -d '*')
          echo "| $g | ${opts:-(none)} | ${against:-itself} | ${st:-(none)} | $n |"
        done
      done
    done
  done
} > $D/matrix.md
for st in "" "--call-stretch lossy" "--call-stretch weighted"; do
  name=$(echo "${st:-none}" | sed 's/--call-stretch //')
  $P same_hour.py /tmp/r11 /tmp/r11-waits.json --no-preempt --wall-time --busy-wakes --deconvolved \
    $st --markdown $D/same-hour-no-preempt-$name.md > /dev/null
done
for g in lab-today lab-native lab-round8 lab-round9/grid round11/grid round11/grid-b; do
  $P variants.py ../../docs/results/calibration/$g --only committed "call stretch" \
    "call stretch, weighted" --markdown $D/variants-$(echo $g | tr / -).md > /dev/null
done
sed '/^device_hold_busy_ms/a call_stretch = [1.0, 1.25, 1.18, 1.05]' \
  ../../examples/scenarios/cpu-2core.toml > $D/cpu-2core-stretch.toml
sed '/^call_stretch = /a call_stretch_weighted = true' $D/cpu-2core-stretch.toml \
  > $D/cpu-2core-stretch-weighted.toml
for sc in cpu-2core-stretch cpu-2core-stretch-weighted; do
  $P against_demo.py ../../docs/results/demo/default --scenario $D/$sc.toml \
    --markdown $D/against-demo-$sc.md > /dev/null
done
