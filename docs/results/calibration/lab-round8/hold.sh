#!/bin/bash
cd /work/main
echo "start $(date -u +%FT%TZ) commit $(git rev-parse HEAD)" > /tmp/cal8/times.txt
flock /tmp/lanes-bench.lock bash -c 'echo "lock $(date -u +%FT%TZ)" >> /tmp/cal8/times.txt; .venv/bin/lanes bench run /tmp/cal8/calibration8.toml --out /tmp/cal8/grid'
echo "end $(date -u +%FT%TZ) rc $?" >> /tmp/cal8/times.txt
