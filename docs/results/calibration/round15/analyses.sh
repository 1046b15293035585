#!/bin/sh
# The fifteenth round's analysis, from the repository root (2026-11-28). The simulator is
# deterministic; the grids are the eleventh round's two (/tmp/r11, /tmp/r11b with their spans.py
# waits, as the thirteenth and fourteenth rounds) and the fourteenth round's (/tmp/r14/read: its
# fifo, sjf and independent runs, with threads/ and sched/ of the same hour; /tmp/r14/grid: all
# four variants). Their traces are not kept in the repository.
set -e
D=../../docs/results/calibration/round15
cd bench/calibrate
P="nice ../../.venv/bin/python"
# 1. the host's speed over time, fitted to each grid's two lightest levels
for g in r14/grid:round14-grid r11:round11-grid r11b:round11-grid-b; do
  $P host_speed.py /tmp/${g%%:*} --json $D/host-speed-${g##*:}.json
done
# 2. eight same-hour readings with and without it (the fourteenth round's matrix)
{
  for g in r11 r11b; do
    o=$([ $g = r11 ] && echo r11b || echo r11)
    for opts in "" "--no-preempt --wall-time"; do
      for against in "" "--against /tmp/$o"; do
        for sp in "" "--host-speed"; do
          n=$($P same_hour.py /tmp/$g /tmp/$g-waits.json $opts --busy-wakes --deconvolved $sp \
            $against | grep -o '\*\*[0-9]* of [0-9]*' | tr -d '*')
          echo "| $g | ${opts:-(none)} | ${against:-itself} | ${sp:-(none)} | $n |"
        done
      done
    done
  done
} > /tmp/matrix-host-speed.txt   # -> $D/matrix-host-speed.md
R14="/tmp/r14/read /tmp/r14/read-waits.json --busy-wakes --deconvolved --against /tmp/r14/grid"
$P same_hour.py $R14 --host-speed --markdown $D/round14-grid-threads-host-speed.md > /dev/null
$P same_hour.py $R14 --no-preempt --wall-time --host-speed --markdown $D/round14-grid-wall-host-speed.md > /dev/null
# 3. the calls off their core, against the readings before it, on every grid with threads/
{
  for spec in "r14:/tmp/r14/read:/tmp/r14/read-waits.json:--against /tmp/r14/grid" \
      "r11:/tmp/r11:/tmp/r11-waits.json:" "r11:/tmp/r11:/tmp/r11-waits.json:--against /tmp/r11b" \
      "r11b:/tmp/r11b:/tmp/r11b-waits.json:" "r11b:/tmp/r11b:/tmp/r11b-waits.json:--against /tmp/r11"; do
    name=${spec%%:*}; rest=${spec#*:}; g=${rest%%:*}; rest=${rest#*:}; w=${rest%%:*}; ag=${rest#*:}
    for opts in "" "--no-preempt" "--no-preempt --wall-time" \
        "--no-preempt --wall-time --call-stretch weighted" "--on-core" \
        "--on-core --call-stretch weighted"; do
      n=$($P same_hour.py $g $w --busy-wakes --deconvolved $opts $ag | grep -o '\*\*[0-9]* of [0-9]*' | tr -d '*' || true)
      echo "| $name | ${ag:-itself} | ${opts:-(per-thread CPU, preemptions)} | $n |"
    done
  done
} > /tmp/matrix-on-core.txt   # -> $D/matrix-on-core.md
$P same_hour.py $R14 --on-core --markdown $D/round14-grid-on-core.md > /dev/null
$P same_hour.py $R14 --on-core --call-stretch weighted --markdown $D/round14-grid-on-core-weighted.md > /dev/null
$P same_hour.py /tmp/r11b /tmp/r11b-waits.json --busy-wakes --deconvolved --on-core \
  --call-stretch weighted --against /tmp/r11 --markdown $D/round11-grid-b-on-core-weighted-against-grid.md > /dev/null
