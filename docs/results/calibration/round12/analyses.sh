#!/bin/sh
# The twelfth round's analyses, from the repository root: the eleventh round's two grids
# (/tmp/r11, /tmp/r11b: docs/results/calibration/round11/analyses.sh; their traces, 235 MB a grid,
# are not kept) read again with two model changes: the wake-ups by the runtime calls running
# (busy_wakes.py; host.pre_wake_busy_ms, post_wake_busy_ms) and the client part deconvolved
# (client_part.py).
set -e
D=../../docs/results/calibration/round12
cd bench/calibrate
P="nice ../../.venv/bin/python"
for g in r11 r11b; do
  $P busy_wakes.py /tmp/$g --markdown $D/wakes-$g.md --json /tmp/$g-wakes.json > /dev/null
  $P client_part.py /tmp/$g --json /tmp/$g-client.json > $D/client-$g.md
done
# the same hour, before (the eleventh round's model) and after, each grid on itself and the other
for g in r11 r11b; do
  o=$([ $g = r11 ] && echo r11b || echo r11)
  for opts in "" "--no-preempt --wall-time" "--wall-time"; do
    for model in "" "--busy-wakes --deconvolved"; do
      for against in "" "--against /tmp/$o"; do
        n=$($P same_hour.py /tmp/$g /tmp/$g-waits.json $opts $model $against \
          | grep -o '\*\*[0-9]* of 45' | tr -d '*')
        echo "| $g | ${opts:-(none)} | ${model:-(none)} | ${against:-itself} | $n |"
      done
    done
  done
done > $D/matrix.md
$P same_hour.py /tmp/r11 /tmp/r11-waits.json --busy-wakes --deconvolved --markdown $D/same-hour.md > /dev/null
$P same_hour.py /tmp/r11b /tmp/r11b-waits.json --busy-wakes --deconvolved --markdown $D/b-same-hour.md > /dev/null
$P same_hour.py /tmp/r11 /tmp/r11-waits.json --no-preempt --wall-time --busy-wakes --deconvolved \
  --markdown $D/same-hour-no-preempt.md > /dev/null
$P same_hour.py /tmp/r11b /tmp/r11b-waits.json --no-preempt --wall-time --busy-wakes --deconvolved \
  --against /tmp/r11 --markdown $D/b-on-a.md > /dev/null
# the committed scenario (its tables now the mean of the two grids') against every grid
for g in lab-round9/grid lab-round8 lab-today lab-native round11/grid round11/grid-b; do
  $P variants.py $D/../$g --only committed --markdown $D/committed-$(echo $g | tr / -).md > /dev/null
done
$P default_question.py --markdown $D/default-question.md > /dev/null
# cpu-2core.toml's four wake-up tables and client_ms: each quantile the mean of the two grids'
$P -c "
import json
w = [json.load(open(f'/tmp/{g}-wakes.json')) for g in ('r11', 'r11b')]
c = [json.load(open(f'/tmp/{g}-client.json')) for g in ('r11', 'r11b')]
mean = lambda a, b: [[p, round((x + y) / 2, 4)] for (p, x), (_, y) in zip(a, b)]
for k in ('pre_wake_ms', 'post_wake_ms', 'pre_wake_busy_ms', 'post_wake_busy_ms'):
    print(k, '=', json.dumps(mean(w[0][k], w[1][k])))
print('client_ms =', json.dumps(mean(*c)))
"
