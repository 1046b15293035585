#!/bin/sh
# The eleventh round's analyses, from the repository root. Two grids ran back to back:
#   lanes bench run docs/results/calibration/round11/experiment.toml --out /tmp/r11    (20:12-20:23 UTC)
#   lanes bench run docs/results/calibration/round11/experiment.toml --out /tmp/r11b   (20:29-20:40 UTC)
# then, for the second, threads.py at 600 req/s and sched.py (fifo and sjf, 200 and 600 req/s).
# The traces (235 MB a grid) are not kept: the run files are in grid/ and grid-b/, with what
# timelines.py and spans.py read off the traces (timelines.json, waits.json, spans.md).
set -e
D=../../docs/results/calibration/round11
cd bench/calibrate
for g in r11 r11b; do
  nice ../../.venv/bin/python timelines.py /tmp/$g                        # -> /tmp/$g/timelines.json
  nice ../../.venv/bin/python spans.py /tmp/$g --json /tmp/$g-waits.json > /tmp/$g-spans.md
done
../../.venv/bin/python threads.py /tmp/r11b/corpus 600 > /tmp/r11b/threads/600.md
../../.venv/bin/python sched.py /tmp/r11b/corpus --policy fifo --rates 200,600 --out /tmp/r11b/sched/fifo.json
../../.venv/bin/python sched.py /tmp/r11b/corpus --policy sjf --rates 200,600 --out /tmp/r11b/sched/sjf.json
# the committed scenario (and variants) against every grid
for g in lab-round9/grid lab-round8 lab-today lab-native; do
  nice ../../.venv/bin/python variants.py $D/../$g --only committed \
    "client part as measured" "I/O CPU in the background" "call stretch" \
    --markdown $D/$(echo $g | cut -d/ -f1).md > /dev/null
done
nice ../../.venv/bin/python variants.py $D/grid --only committed "client part as measured" \
  "I/O CPU in the background" "call stretch" --markdown $D/tonight.md > /dev/null
nice ../../.venv/bin/python variants.py $D/grid-b --only committed "client part as measured" \
  --markdown $D/tonight-b.md > /dev/null
# scenarios read off one grid, set against it and against the other
nice ../../.venv/bin/python compare.py /tmp/r11 --wall-time --markdown $D/compare.md > /dev/null
S="nice ../../.venv/bin/python same_hour.py"
$S /tmp/r11 /tmp/r11-waits.json --markdown $D/same-hour.md > /dev/null
$S /tmp/r11 /tmp/r11-waits.json --no-preempt --wall-time --markdown $D/same-hour-no-preempt.md > /dev/null
$S /tmp/r11b /tmp/r11b-waits.json --markdown $D/b-same-hour.md > /dev/null
$S /tmp/r11b /tmp/r11b-waits.json --no-preempt --wall-time --markdown $D/b-same-hour-wall.md > /dev/null
$S /tmp/r11 /tmp/r11-waits.json --no-preempt --wall-time --against /tmp/r11b --markdown $D/a-on-b.md > /dev/null
$S /tmp/r11b /tmp/r11b-waits.json --no-preempt --wall-time --against /tmp/r11 --markdown $D/b-on-a.md > /dev/null
$S /tmp/r11b /tmp/r11b-waits.json --against /tmp/r11 --markdown $D/b-on-a-sched.md > /dev/null
nice ../../.venv/bin/python default_question.py --markdown $D/default-question.md > /dev/null
