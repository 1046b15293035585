#!/bin/bash
cd /work/main
echo "queued $(date -u +%FT%TZ) commit $(git rev-parse HEAD)" > /tmp/cal8/client-times.txt
flock /tmp/lanes-bench.lock bash -c 'echo "lock $(date -u +%FT%TZ) load $(cat /proc/loadavg)" >> /tmp/cal8/client-times.txt; .venv/bin/python bench/calibrate/client.py /tmp/cal8/client.toml --out /tmp/cal8/client; echo "end $(date -u +%FT%TZ) rc $? load $(cat /proc/loadavg)" >> /tmp/cal8/client-times.txt'
