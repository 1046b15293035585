#!/bin/bash
# The round's analyses, after every lab hold: nice -n 19, no lock.
set -e
cd /work/main
D=docs/results/calibration/lab-round8
S=$D/scratch
P="nice -n 19 .venv/bin/python"
$P bench/calibrate/compare.py docs/results/calibration/lab-native --seeds 3 --requests 40000 --against $D --markdown $D/compare-committed.md > /dev/null
$P bench/calibrate/compare.py docs/results/calibration/lab-native --seeds 3 --requests 40000 --against $D --max-others 0.2 --markdown $D/compare-committed-quiet.md > /dev/null
$P bench/calibrate/self_check.py $D --markdown $D/self-check.md > /dev/null
$P bench/calibrate/self_check.py $D --max-others 0.2 --markdown $D/self-check-quiet.md > /dev/null
for v in fifo sjf independent; do $P bench/calibrate/tails.py /tmp/cal8/grid --variant $v --rates 200,400,600 --sim --markdown $D/tails-$v.md > /dev/null; done
$P bench/calibrate/variants.py $D --markdown $D/variants.md > /dev/null
$P bench/calibrate/variants.py $D --max-others 0.2 --markdown $D/variants-quiet.md > /dev/null
$P bench/calibrate/variants.py $D --speed-cv 0.1 --only "run speed cv 0.1" --markdown $D/variants-speed-0.10.md > /dev/null
$P bench/calibrate/client.py --report /tmp/cal8/client --markdown $D/client/client.md > /dev/null
cd bench/calibrate
P="nice -n 19 ../../.venv/bin/python"
S=../../$S
$P $S/window.py > $S/window.txt
$P $S/rcv.py /tmp/cal/run7 > $S/rcv-lab-today.txt
$P $S/rcv.py /tmp/cal8/grid > $S/rcv-round8.txt
for q in 99 0.2; do $P $S/diag.py --max-others $q --quiet; for cv in "" "0.138,0.059,0.069" "0.167,0.084,0.169"; do $P $S/diag.py --one --max-others $q --quiet ${cv:+--cv $cv}; done; done > $S/one-draw.txt
$P $S/speed.py > $S/speed.txt
$P $S/speed2.py > $S/speed2.txt
$P $S/split.py > ../../$D/split.md
echo done
