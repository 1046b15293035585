#!/bin/bash
cd /work/main
for b in 1 2; do
  for v in py pyfinal; do
    echo "=== $b $v $(date +%T)"
    PYTHONPATH=/tmp/prof/$v timeout 400 .venv/bin/python bench/serve/peers/latency_floor.py --repeats 3 --seconds 8 --out /tmp/lf/$v-$b 2>&1 | tail -7
  done
done
