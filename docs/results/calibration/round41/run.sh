#!/bin/sh
# The forty-first round, every command in the order it ran, from the repository root
# (docs/results/calibration.md, "The forty-first round"). Steps 1-5 read the committed grids of
# every hour with two (this host: rounds 25-29 and 38; the Intel machine: rounds 33, 34, 37);
# steps 6-11 run two new grids of 10 repeats a level, judge the file on them, and read the hour.
set -e
D=$PWD/docs/results/calibration/round41; R=$PWD/docs/results/calibration; P=$PWD/.venv/bin/python
mkdir -p $D/out/lab
AMD="$R/round25/grid-seed127:$R/round25/grid-seed131 $R/round26/grid-seed137:$R/round26/grid-seed139
 $R/round26/grid-seed149:$R/round26/grid-seed151 $R/round27/grid-seed157:$R/round27/grid-seed163
 $R/round27/grid-seed167:$R/round27/grid-seed173 $R/round28/grid-seed179:$R/round28/grid-seed181
 $R/round29/grid-seed193:$R/round29/grid-seed197 $R/round38/grid-seed221:$R/round38/grid-seed223"
INTEL="$R/round33/grid-seed203:$R/round33/grid-seed205 $R/round34/grid-seed207:$R/round34/grid-seed211
 $R/round37/grid-seed213:$R/round37/grid-seed217"
# 1. Each grid predicted by the other grid of its hour, judged as the simulator is judged
#    (self_check.py --predicts: compare.py's table and counts below the predicted grid's knee).
for pair in $AMD $INTEL; do
  a=${pair%%:*}; b=${pair##*:}
  for x in "$a $b" "$b $a"; do
    set -- $x
    (cd bench/calibrate && PYTHONPATH=. $P self_check.py $1 --predicts $2 \
      --markdown $D/out/lab/lab-$(basename $1)-on-$(basename $2).md > /dev/null)
  done
done
# 2. The counts beside the simulator's on the same grids (the committed file scaled to each
#    grid's hour: round 38's tables for this host, round 37's for the Intel machine).
{ echo "# the hour's other grid"; (cd $D/out/lab && $P $R/round22/count.py lab-*.md)
  echo "# the file"
  (cd $R/round38/out/judged-old/grids && $P $R/round22/count.py file-hour-on-*.md)
  (cd $R/round38/out/judged-new && $P $R/round22/count.py file-hour-on-*.md)
  (cd $R/round37/out/judged && $P $R/round22/count.py file-hour-on-grid-seed20[3-9].md \
    file-hour-on-grid-seed21[1-7].md); } > $D/out/counts.txt
# 3. Each model's p99 at 400-800 req/s: the file and the hour's other grid, per grid.
export PYTHONPATH=bench/calibrate:$R/round29
$P $D/pairs.py "This host (AMD EPYC), rounds 25-29 and 38" $AMD > $D/out/by-model-amd.md
$P $D/pairs.py "The Intel machine, rounds 33, 34 and 37" $INTEL > $D/out/by-model-intel.md
$P $D/pairs.py "Round 38's quiet hour" $R/round38/grid-seed221:$R/round38/grid-seed223 \
  > $D/out/by-model-221-223.md
# 4. Whether the two grids of an hour differ by more than their repeats do (Welch's t per figure).
$P $D/drift.py "This host (AMD EPYC), rounds 25-29 and 38" $AMD > $D/out/drift-amd.md
$P $D/drift.py "The Intel machine, rounds 33, 34 and 37" $INTEL > $D/out/drift-intel.md
# 5. The counts of step 2 summed per host.
$P $D/totals.py $D/out/counts.txt > $D/out/totals.md
# 6. Two grids of 10 repeats a level on this host (arrival seeds 227 and 229, about 27 minutes
#    each, back to back; traces kept in /tmp/r41).
sh $D/lab.sh 227
sh $D/lab.sh 229
# 7. The file judged on each and on both pooled (20 repeats a level), scaled to the hour against
#    grid 157; below compare.py's knee and up to the lab's capacity at SLO (round 39).
FILE=$R/round27/scenarios/seed157-reading.toml
G2="$D/grid-seed227 $D/grid-seed229"
mkdir -p $D/out/judged
GRIDS="$G2" OUT=$D/out/judged sh $R/round34/judge_intel.sh file=$FILE > /dev/null
GRIDS="$G2" OUT=$D/out/judged KNEE=capacity sh $R/round34/judge_intel.sh file-capacity=$FILE > /dev/null
(cd bench/calibrate && $P against_demo.py $G2 --grid --scenario $FILE --windows 100 \
  --hour-speed $R/round27/grid-seed157 --markdown $D/out/judged/file-hour-pooled.md > /dev/null)
# 8. The lab against itself at 10 repeats: each grid's repeats (leave one out) and each grid
#    predicting the other.
for g in 227 229; do
  (cd bench/calibrate && $P self_check.py $D/grid-seed$g --markdown $D/out/lab/self-$g.md > /dev/null)
done
(cd bench/calibrate && $P self_check.py $D/grid-seed227 --predicts $D/grid-seed229 \
  --markdown $D/out/lab/lab-grid-seed227-on-grid-seed229.md > /dev/null)
(cd bench/calibrate && $P self_check.py $D/grid-seed229 --predicts $D/grid-seed227 \
  --markdown $D/out/lab/lab-grid-seed229-on-grid-seed227.md > /dev/null)
(cd $D/out && $P $R/round22/count.py judged/*.md lab/lab-grid-seed22[79]-*.md) > $D/out/counts-10.txt
# 9. Each model's p99 and the drift test on the pair.
$P $D/pairs.py "This host, 10 repeats a level" $D/grid-seed227:$D/grid-seed229 > $D/out/by-model-10.md
$P $D/drift.py "This host, 10 repeats a level" $D/grid-seed227:$D/grid-seed229 > $D/out/drift-10.md
# 10. The hour's reading and its judging: read.sh (after step 9).
sh $D/read.sh
# 11. Two variants of the file on grid 227 (scale_host.py): the hooks' CPU x0.85 (the speed
#     probe's ratio to grid 157's hour), with and without the background load x0.85, and the
#     background load alone taken out.
mkdir -p $D/out/variants
FILE=$R/round27/scenarios/seed157-reading.toml
for v in "prepost85 0.85 1" "prepost85-busy85 0.85 0.85" "busy0 1 0"; do
  set -- $v
  $P $D/scale_host.py $FILE /tmp/r41-$1.toml $2 $3
  (cd bench/calibrate && $P against_demo.py $D/grid-seed227 --grid --scenario /tmp/r41-$1.toml \
    --windows 100 --hour-speed $R/round27/grid-seed157 --markdown $D/out/variants/$1-on-grid-seed227.md > /dev/null)
done
(cd $D/out/variants && $P $R/round22/count.py *.md) > $D/out/variants/counts.txt
