#!/bin/sh
# The thirty-fourth round (docs/results/calibration.md), from the repository root, in the order it
# ran on 2026-12-03 (UTC). Each timed step under the lab lock. Outputs in out/. The traced grids
# live in /tmp (round 31's grid 201 in /tmp/r31, this round's in /tmp/r34); their run files,
# plan, summary and timelines.json are committed beside this script (grid-seed207/, grid-seed211/).
set -e
ROOT=$PWD; P=$ROOT/.venv/bin/python; R=$ROOT/docs/results/calibration; D=$R/round34; O=$D/out
L="flock /tmp/lanes-bench.lock"
export PYTHONPATH=$ROOT/bench/calibrate
G201=/tmp/r31/grid-seed201; REF=$R/round27/grid-seed157
# 1. the file and round 31's spells by load on the fifteen grids of the earlier host (08:33-08:44)
$L sh $R/round29/judge_all.sh examples/scenarios/cpu-2core.toml file $O
$L sh $R/round29/judge_all.sh $R/round31/scenarios/load-0.06-0.16.toml load-0.06-0.16 $O
$L $P $R/round29/by_model.py examples/scenarios/cpu-2core.toml > $O/by-model-file.md
$L $P $R/round29/by_model.py $R/round31/scenarios/load-0.06-0.16.toml > $O/by-model-load-0.06-0.16.md
# 2. a grid of this machine, threads.py and sched.py beside it (08:44-08:55), sched.py under
#    independent (08:56)
$L sh $D/lab.sh 207
$L sh $D/run-threads.sh
(cd bench/calibrate && $L $P sched.py /tmp/r34/grid-seed207/corpus --policy independent \
  --rates 600,800 --out $O/sched-independent-207.json > /dev/null)
# 3. the calls off their cores, lab against simulated (grid 201)
for v in independent default; do
  $P $D/offcore.py $G201 --variant $v --sim examples/scenarios/cpu-2core.toml --hour-speed $REF \
    > $O/offcore-201-$v.md
done
$P $D/offcore.py $G201 --variant fifo > $O/offcore-201-fifo.md
# 4. the busy wake-ups by variant on grid 201 (busy_wakes.py on each half of the grid)
$P bench/calibrate/busy_wakes.py $G201 --markdown $O/busy-wakes-201.md --json $O/wakes-201-all.json > /dev/null
for kind in crowded lone; do
  G=/tmp/r34/g201-$kind; rm -rf $G; mkdir -p $G/runs
  for f in plan.json summary.json timelines.json experiment.toml; do ln -sfn $G201/$f $G/$f; done
  if [ $kind = crowded ]; then vs="independent default"; else vs="fifo sjf"; fi
  for v in $vs; do ln -sfn $G201/runs/$v $G/runs/$v; done
  $P bench/calibrate/busy_wakes.py $G --json $O/wakes-201-$kind.json > /dev/null
done
# 5. the trial files, judged model by model on the fifteen grids (08:58-09:07)
$P $D/variants.py $D/scenarios
for s in preempts preempts-lag wakes-crowded wakes-lone; do
  $L $P $R/round29/by_model.py $D/scenarios/$s.toml > $O/by-model-$s.md
done
$P $D/offcore.py $G201 --variant independent --rates 800 --sim $D/scenarios/preempts-lag.toml \
  --hour-speed $REF | sed -n '/^#### sim/,$p' > $O/offcore-201-independent-preempts-lag.md
# 6. where the slowest requests spend their time, and the wake-ups' spells
$P $D/wake_spells.py $G201 > $O/wake-spells-201.md
$P $D/wake_spells.py /tmp/r34/grid-seed207 > $O/wake-spells-207.md
# 7. a second grid of this machine (09:10-09:20), then both files on this machine's grids
$L sh $D/lab.sh 211
$P $D/wake_spells.py /tmp/r34/grid-seed211 > $O/wake-spells-211.md
$L sh $D/judge_intel.sh file=examples/scenarios/cpu-2core.toml \
  load-0.06-0.16=$R/round31/scenarios/load-0.06-0.16.toml > $O/intel/counts.txt
for g in /tmp/r34/grid-seed207 /tmp/r34/grid-seed211; do
  $P bench/calibrate/hour_speed.py $g --reference $REF | tail -1; done > $O/hour-speed.txt
# 8. wake-ups in spells (host.wake_spell_ms, new in this round): the file and wakes-crowded with
#    spells of 4 ms holding 0.9 of the score, model by model, then the file with them pooled
#    per hour (09:36-09:52)
for s in wake-spells-4 wakes-crowded-spells-4; do
  $L $P $R/round29/by_model.py $D/scenarios/$s.toml > $O/by-model-$s.md
done
$L sh $R/round29/judge_all.sh $D/scenarios/wake-spells-4.toml wake-spells-4 $O
for n in wake-spells-4 file load-0.06-0.16; do
  echo "$n: $($P $R/round22/count.py $O/$n-hour-r*-pooled.md | awk '{w+=$2; t+=$4; c+=$11} END {print w" of "t" pooled, "c" within 15 % or the CI"}'), $($P $R/round22/count.py $O/grids/$n-hour-on-*.md | awk '{w+=$2; t+=$4} END {print w" of "t" grid by grid"}')"
done > $O/counts-sums.txt
