#!/bin/sh
# The nineteenth round's reading, from the repository root (2026-11-29), of round 18's grid (no new
# lab run): round18/run.sh's /tmp/r18 and round18/read.sh's /tmp/r18/read with its waits. First
# timelines.py again (it now keeps each cell's median cpu_ms and the calls' preemptions:
# round18/grid/timelines.json is that output, the earlier figures unchanged), then same_hour.py
# with the round's three new readings alone and together: the calls' own CPU as the device costs
# (--call-cpu), the preemptions read off the calls (--preempt-from-calls), and the preemptions'
# waits net of the shared cores' (--absorbed, host.call_preempt_absorbed); then round 16's two
# yardsticks (noise.py) and the per-model tables (per_model.py).
set -e
ROOT=$PWD; D=$ROOT/docs/results/calibration/round19; P="nice $ROOT/.venv/bin/python"
G=/tmp/r18/grid; R=/tmp/r18/read; O=$D/out
mkdir -p $O
$P bench/calibrate/timelines.py $G
cp $G/timelines.json docs/results/calibration/round18/grid/timelines.json
cd $ROOT/bench/calibrate
S="$P same_hour.py $R /tmp/r18/read-waits.json --busy-wakes --deconvolved --against $G --calls"
$S --markdown $O/threads.md > /dev/null
$S --absorbed --markdown $O/absorbed.md > /dev/null
$S --preempt-from-calls --markdown $O/calls.md > /dev/null
$S --preempt-from-calls --absorbed --markdown $O/calls-absorbed.md > /dev/null
$S --call-cpu --markdown $O/cpu.md > /dev/null
$S --call-cpu --absorbed --markdown $O/cpu-absorbed.md > /dev/null
$S --call-cpu --preempt-from-calls --markdown $O/cpu-calls.md > /dev/null
$S --call-cpu --preempt-from-calls --absorbed --markdown $O/cpu-calls-absorbed.md > /dev/null
$S --call-cpu --no-preempt --markdown $O/cpu-nopreempt.md > /dev/null
# the server's CPU beyond the calls fitted over the runs of a 5 s window (--server-cpu)
$S --server-cpu --markdown $O/server.md > /dev/null
$S --call-cpu --server-cpu --markdown $O/cpu-server.md > /dev/null
$S --call-cpu --server-cpu --absorbed --markdown $O/cpu-server-absorbed.md > /dev/null
$S --call-cpu --server-cpu --no-preempt --markdown $O/cpu-server-nopreempt.md > /dev/null
# diagnostics: each level read off itself (--calls-by-level, --costs-by-level)
$S --call-cpu --preempt-from-calls --calls-by-level --absorbed \
  --markdown $O/cpu-calls-bylevel-absorbed.md > /dev/null
$S --call-cpu --server-cpu --costs-by-level --markdown $O/cpu-server-costs-bylevel.md > /dev/null
date -u
PYTHONPATH=. $P $ROOT/docs/results/calibration/round16/noise.py $G $O/threads.md $O/absorbed.md \
  $O/calls.md $O/calls-absorbed.md $O/cpu.md $O/cpu-absorbed.md $O/cpu-calls.md \
  $O/cpu-calls-absorbed.md $O/cpu-nopreempt.md $O/server.md $O/cpu-server.md \
  $O/cpu-server-absorbed.md $O/cpu-server-nopreempt.md $O/cpu-calls-bylevel-absorbed.md \
  $O/cpu-server-costs-bylevel.md > $O/noise.txt
A="$R /tmp/r18/read-waits.json --busy-wakes --deconvolved --against $G"
PYTHONPATH=. $P $D/per_model.py $G $A > $O/per-model-threads.md
PYTHONPATH=. $P $D/per_model.py $G $A --call-cpu --absorbed > $O/per-model-cpu-absorbed.md
PYTHONPATH=. $P $D/per_model.py $G $A --call-cpu --preempt-from-calls --absorbed \
  > $O/per-model-cpu-calls-absorbed.md
PYTHONPATH=. $P $D/per_model.py $G $A --call-cpu --server-cpu > $O/per-model-cpu-server.md
# the runs' windows: round 18's grid and the fifo/sjf check before and after the runner's fix
# (fifo-sjf.toml, run 00:09-00:13 UTC into /tmp/r19/fifo-sjf and 00:21-00:25 UTC into
# /tmp/r19/fifo-sjf2; their run files in fifo-sjf/ and fifo-sjf2/)
cd $ROOT
$P $D/windows.py $G > $O/round18-windows.md
$P $D/windows.py $D/fifo-sjf > $O/fifo-sjf-before.md
$P $D/windows.py $D/fifo-sjf2 > $O/fifo-sjf-after.md
date -u
