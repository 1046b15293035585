#!/bin/bash
# perf profile of lanes serve char_cnn_top1 over REST near its capacity (3,600 req/s), symbols build
cd /work/main
PYTHONPATH=/tmp/prof/py .venv/bin/python -m lanes serve --models /tmp/prof/repo --devices cpu --cpu-threads 1 --metrics-port off --port 8911 --grpc-port 8912 > /tmp/prof/serve.log 2>&1 &
SP=$!
for i in $(seq 1 100); do curl -sf localhost:8911/v2/health/ready >/dev/null && break; sleep 0.2; done
PID=$(pgrep -f "port 8911" | head -1)
echo "server pid $PID"
B="--body-file /tmp/prof/bodies/char_cnn_top1.json -H Content-Type:application/json"
.venv/bin/lanes bench http://127.0.0.1:8911/v2/models/char_cnn_top1/infer $B -R 2000 -d 3s -t 1 -c 64 -q
cat /proc/$PID/stat | awk '{print "cpu before", $14, $15}'
perf record -F 700 -g --call-graph dwarf,8192 -p $PID -o /tmp/prof/perf.data -- sleep 9 > /dev/null 2>&1 &
PP=$!
sleep 0.5
.venv/bin/lanes bench http://127.0.0.1:8911/v2/models/char_cnn_top1/infer $B -R 3600 -d 8s -t 1 -c 64 --json /tmp/prof/load.json -q
wait $PP
for t in /proc/$PID/task/*; do echo "$(cat $t/comm) $(awk '{print $14+$15}' $t/stat)"; done | sort | awk '{a[$1]+=$2} END {for (k in a) print "ticks", k, a[k]}'
kill $SP; wait
