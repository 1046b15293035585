#!/bin/sh
# The thirty-seventh round, every command in the order it ran, from the repository root
# (docs/results/calibration.md, "The thirty-seventh round").
set -e
D=$PWD/docs/results/calibration/round37; R=$PWD/docs/results/calibration
# 1. Two grids on this machine with every call's run delay in the timeline (2026-12-03 18:00
#    and 18:14 UTC, about 9 minutes each; traces kept in /tmp/r37).
sh $D/lab.sh 213
sh $D/lab.sh 217
# 2. The stops the calls met, per variant and level, beside the idle probe's (round 36) and the
#    runs' steal; their lengths and each run's rate kept in out/stops-met.json.
PYTHONPATH=bench/calibrate .venv/bin/python $D/stops_met.py /tmp/r37/grid-seed213 \
  /tmp/r37/grid-seed217 --idle $R/round36/out/idle-1.json $R/round36/out/idle-2.json \
  --json $D/out/stops-met.json > $D/out/stops-met.md
# 3. The judged file with those stops.
PYTHONPATH=bench/calibrate .venv/bin/python $D/calls_scenario.py $D/out/stops-met.json \
  --write $D/scenarios/calls-stops.toml
# 4. The file, round 36's stops and these judged on this machine's seven grids (round 34's
#    five and this round's two), each scaled to its hour (about 2 minutes a scenario).
GRIDS="$R/round31/grid-seed201 $R/round33/grid-seed203 $R/round33/grid-seed205 \
  $R/round34/grid-seed207 $R/round34/grid-seed211 $D/grid-seed213 $D/grid-seed217" \
  OUT=$D/out/judged sh $R/round34/judge_intel.sh \
  file=$R/round27/scenarios/seed157-reading.toml stops36=$R/round36/scenarios/stops.toml \
  calls=$D/scenarios/calls-stops.toml > $D/out/judged/counts.txt
# 5. Each model's p99 on the same seven grids: the file, round 36's stops and these (round 29's
#    by_model.py with GRIDS set; about 2 minutes each).
export GRIDS="$R/round31/grid-seed201 $R/round33/grid-seed203 $R/round33/grid-seed205 \
  $R/round34/grid-seed207 $R/round34/grid-seed211 $D/grid-seed213 $D/grid-seed217"
for s in file=$R/round27/scenarios/seed157-reading.toml stops36=$R/round36/scenarios/stops.toml \
  calls=$D/scenarios/calls-stops.toml; do
  PYTHONPATH=bench/calibrate .venv/bin/python $R/round29/by_model.py ${s#*=} \
    > $D/out/by-model-${s%%=*}.md
done
# 6. A reading of this machine: grid 213 read as round 27 read grid 157 (same_hour.py with the
#    round-20 file's other keys, the calls' CPU, the server's CPU, the absorbed preemptions), its
#    preemptions from the calls' own run delay (--preempt-from-calls; timelines.py now takes the
#    run delay as a call's time off a core, so both grids' timelines.json were written again),
#    the committed stretch and speed process added, then the same with grid 213's stops
#    (2026-12-03 18:58-18:59 UTC, /tmp/r37-read.sh).
A=/tmp/r37/grid-seed213; RD=/tmp/r37/read; P=$PWD/.venv/bin/python
for s in 213 217; do
  (cd bench/calibrate && $P timelines.py /tmp/r37/grid-seed$s > /dev/null)
  cp /tmp/r37/grid-seed$s/timelines.json $D/grid-seed$s/
done
PYTHONPATH=bench/calibrate $P $D/stops_met.py $A --json $D/out/stops-met-213.json > /dev/null
rm -rf $RD; mkdir -p $RD/runs
for f in corpus experiment.toml plan.json summary.json timelines.json; do ln -sfn $A/$f $RD/$f; done
for v in fifo sjf independent; do ln -sfn $A/runs/$v $RD/runs/$v; done
(cd bench/calibrate && export PYTHONPATH=. &&
  $P spans.py $RD --json /tmp/r37/read-waits.json > /dev/null &&
  $P same_hour.py $RD /tmp/r37/read-waits.json --busy-wakes --deconvolved --against $A \
    --scenario $R/round20/cpu-2core-2026-11-26.toml --call-cpu --server-cpu --absorbed \
    --preempt-from-calls --markdown $D/out/seed213-same-hour.md \
    --write /tmp/r37/seed213-read.toml > /dev/null)
sed -e 's/^call_preempt_absorbed = true$/call_preempt_absorbed = true\ncall_stretch = [1.0, 1.25, 1.16, 1.0]\nspeed_cv = 0.1\nspeed_ms = 250.0/' \
  /tmp/r37/seed213-read.toml > $D/scenarios/seed213-reading.toml
PYTHONPATH=bench/calibrate $P $D/calls_scenario.py $D/out/stops-met-213.json \
  --base $D/scenarios/seed213-reading.toml --write $D/scenarios/seed213-reading-stops.toml
# 7. Both readings judged on the seven grids, scaled to each hour against grid 213, overall and
#    model by model (19:01-19:06 UTC).
REF=$D/grid-seed213 OUT=$D/out/judged sh $R/round34/judge_intel.sh \
  reading213=$D/scenarios/seed213-reading.toml \
  reading213-stops=$D/scenarios/seed213-reading-stops.toml > $D/out/judged/counts.txt
for s in reading213=$D/scenarios/seed213-reading.toml \
  reading213-stops=$D/scenarios/seed213-reading-stops.toml; do
  REFERENCE=$D/grid-seed213 PYTHONPATH=bench/calibrate $P $R/round29/by_model.py ${s#*=} \
    > $D/out/by-model-${s%%=*}.md
done
# 8. Which part of grid 213's reading lowers the knee: the file with one part of it laid on
#    (round 27's overlay.py: host, preempt, server, all three), then the host part and the
#    whole reading each with the file's busy_cores (0.1486) instead of the reading's (0.4652),
#    judged as above; model by model for the last two (19:07-19:19 UTC).
for parts in host preempt server host,preempt,server; do
  n=file-with-213-$(echo $parts | tr , -)
  (cd bench/calibrate && PYTHONPATH=. $P $R/round27/overlay.py \
    $R/round27/scenarios/seed157-reading.toml $D/scenarios/seed213-reading.toml \
    --parts $parts --out $D/scenarios/$n.toml)
done
sed 's/^busy_cores = .*/busy_cores = 0.1486/' $D/scenarios/file-with-213-host.toml \
  > $D/scenarios/file-with-213-host-file-busy.toml
sed 's/^busy_cores = .*/busy_cores = 0.1486/' $D/scenarios/seed213-reading.toml \
  > $D/scenarios/seed213-reading-file-busy.toml
OUT=$D/out/judged sh $R/round34/judge_intel.sh \
  file-with-213-host=$D/scenarios/file-with-213-host.toml \
  file-with-213-preempt=$D/scenarios/file-with-213-preempt.toml \
  file-with-213-server=$D/scenarios/file-with-213-server.toml \
  file-with-213-host-preempt-server=$D/scenarios/file-with-213-host-preempt-server.toml \
  file-with-213-host-file-busy=$D/scenarios/file-with-213-host-file-busy.toml \
  > $D/out/judged/counts.txt
REF=$D/grid-seed213 OUT=$D/out/judged sh $R/round34/judge_intel.sh \
  reading213-file-busy=$D/scenarios/seed213-reading-file-busy.toml > $D/out/judged/counts.txt
PYTHONPATH=bench/calibrate $P $R/round29/by_model.py \
  $D/scenarios/file-with-213-host-file-busy.toml > $D/out/by-model-file-with-213-host-file-busy.md
REFERENCE=$D/grid-seed213 PYTHONPATH=bench/calibrate $P $R/round29/by_model.py \
  $D/scenarios/seed213-reading-file-busy.toml > $D/out/by-model-reading213-file-busy.md
# 9. Grid 213 read again with same_hour.py counting the server's constant CPU once (host_fit;
#    busy_cores 0.211), judged overall and model by model (19:36-19:39 UTC).
(cd bench/calibrate && export PYTHONPATH=. &&
  $P same_hour.py $RD /tmp/r37/read-waits.json --busy-wakes --deconvolved --against $A \
    --scenario $R/round20/cpu-2core-2026-11-26.toml --call-cpu --server-cpu --absorbed \
    --preempt-from-calls --markdown $D/out/seed213-same-hour-v2.md \
    --write /tmp/r37/seed213-read-v2.toml > /dev/null)
sed -e 's/^call_preempt_absorbed = true$/call_preempt_absorbed = true\ncall_stretch = [1.0, 1.25, 1.16, 1.0]\nspeed_cv = 0.1\nspeed_ms = 250.0/' \
  /tmp/r37/seed213-read-v2.toml > $D/scenarios/seed213-reading-v2.toml
REF=$D/grid-seed213 OUT=$D/out/judged sh $R/round34/judge_intel.sh \
  reading213-v2=$D/scenarios/seed213-reading-v2.toml > $D/out/judged/counts.txt
REFERENCE=$D/grid-seed213 PYTHONPATH=bench/calibrate $P $R/round29/by_model.py \
  $D/scenarios/seed213-reading-v2.toml > $D/out/by-model-reading213-v2.md
