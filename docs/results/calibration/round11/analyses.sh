#!/bin/sh
# The eleventh round's analyses, from the repository root. The grid ran as
#   lanes bench run docs/results/calibration/round11/experiment.toml --out /tmp/r11
# (2026-11-27 20:12-20:23 UTC; the traces, 235 MB, are not kept: the run files are in grid/,
# timelines.json and waits.json are what timelines.py and spans.py read off the traces).
set -e
D=docs/results/calibration/round11
cd bench/calibrate
nice ../../.venv/bin/python timelines.py /tmp/r11                       # -> /tmp/r11/timelines.json
nice ../../.venv/bin/python spans.py /tmp/r11 --markdown ../../$D/spans.md --json ../../$D/waits.json
# the committed scenario (and three variants) against every grid, tonight's included
for g in lab-round9/grid lab-round8 lab-today lab-native; do
  nice ../../.venv/bin/python variants.py ../../docs/results/calibration/$g --only committed \
    "client part as measured" "I/O CPU in the background" "call stretch" \
    --markdown ../../$D/$(echo $g | cut -d/ -f1).md > /dev/null
done
nice ../../.venv/bin/python variants.py ../../$D/grid --only committed "client part as measured" \
  "I/O CPU in the background" "call stretch" --markdown ../../$D/tonight.md > /dev/null
# a scenario read off tonight's grid alone
nice ../../.venv/bin/python compare.py /tmp/r11 --wall-time --markdown ../../$D/compare.md > /dev/null
nice ../../.venv/bin/python same_hour.py /tmp/r11 ../../$D/waits.json --markdown ../../$D/same-hour.md > /dev/null
nice ../../.venv/bin/python same_hour.py /tmp/r11 ../../$D/waits.json --no-preempt \
  --markdown ../../$D/same-hour-no-preempt.md > /dev/null
