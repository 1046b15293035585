#!/bin/bash
# /tmp/prof/py: python/ of 41c5e38 with its build's _core.abi3.so; /tmp/prof/pynew: the same with
# the repoll wrapper (crates/lanes-server/src/repoll.rs). Run under flock /tmp/lanes-bench.lock.
cd /work/main
for i in 1 2 3; do
  if [ $((i % 2)) = 1 ]; then order="py pynew"; else order="pynew py"; fi
  for v in $order; do
    echo "=== $i $v $(date +%T)"
    PYTHONPATH=/tmp/prof/$v timeout 900 .venv/bin/python bench/serve/peers/run.py race --servers lanes,lanes-auto --models char_cnn_top1 --repeats 1 --out /tmp/race/$v-$i 2>&1 | grep -v "^\s*$" | tail -12
  done
done
