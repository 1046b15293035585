#!/bin/sh
# The thirteenth round's analysis, from the repository root: the eleventh round's two grids
# (/tmp/r11, /tmp/r11b and their spans.py waits; their traces are not kept) read with the
# twelfth round's model, with and without a run queue per core (same_hour.py --run-queues).
set -e
D=../../docs/results/calibration/round13
cd bench/calibrate
P="nice ../../.venv/bin/python"
{
  echo "| grid | options | set against | cores | within 15 % |"
  echo "|---|---|---|---|---:|"
  for g in r11 r11b; do
    o=$([ $g = r11 ] && echo r11b || echo r11)
    for opts in "" "--no-preempt --wall-time"; do
      for against in "" "--against /tmp/$o"; do
        for rq in "" "--run-queues"; do
          n=$($P same_hour.py /tmp/$g /tmp/$g-waits.json $opts --busy-wakes --deconvolved $rq \
            $against | grep -o '\*\*[0-9]* of 45' | tr -d '*')
          echo "| $g | ${opts:-(none)} | ${against:-itself} | ${rq:-(processor sharing)} | $n |"
        done
      done
    done
  done
} > $D/matrix.md
$P same_hour.py /tmp/r11 /tmp/r11-waits.json --no-preempt --wall-time --busy-wakes --deconvolved \
  --run-queues --markdown $D/same-hour-no-preempt-run-queues.md > /dev/null
