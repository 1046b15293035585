#!/bin/bash
# perf profile of lanes serve identity at 100 req/s
cd /work/main
PYTHONPATH=/tmp/prof/py .venv/bin/python -m lanes serve --models /tmp/prof/out/repos/identity --devices cpu --cpu-threads 1 --metrics-port off --port 8911 --grpc-port 8912 > /tmp/prof/serve.log 2>&1 &
SP=$!
for i in $(seq 1 100); do curl -sf localhost:8911/v2/health/ready >/dev/null && break; sleep 0.2; done
PID=$(pgrep -f "port 8911" | head -1)
echo "server pid $PID"
# warm
.venv/bin/lanes bench http://127.0.0.1:8911/v2/models/identity/infer --body-file /tmp/prof/out/bodies/identity.json -H "Content-Type: application/json" -R 100 -d 2s -t 1 -c 16 -q
perf record -F 10000 -g --call-graph dwarf,16384 -p $PID -o /tmp/prof/perf.data -- sleep 12 &
PP=$!
sleep 0.5
.venv/bin/lanes bench http://127.0.0.1:8911/v2/models/identity/infer --body-file /tmp/prof/out/bodies/identity.json -H "Content-Type: application/json" -R 100 -d 10s -t 1 -c 16 --json /tmp/prof/infer.json -q
wait $PP
perf record -F 10000 -g --call-graph dwarf,16384 -p $PID -o /tmp/prof/perf-live.data -- sleep 12 &
PP=$!
sleep 0.5
.venv/bin/lanes bench http://127.0.0.1:8911/v2/health/live -R 100 -d 10s -t 1 -c 16 --json /tmp/prof/live.json -q
wait $PP
kill $SP; wait
