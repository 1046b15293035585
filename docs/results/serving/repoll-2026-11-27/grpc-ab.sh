#!/bin/bash
# /tmp/prof/pyfinal: python/ with the repoll build (238dead); /tmp/prof/pystreams: the same with crates/lanes-server/src/streams.rs.
# Run under flock /tmp/lanes-bench.lock.
# gRPC against REST, one client for both (lanes bench), repoll build vs streams build, alternating.
cd /work/main
for i in 1 2; do
  if [ $i = 1 ]; then order="pyfinal pystreams"; else order="pystreams pyfinal"; fi
  for v in $order; do
    echo "=== $i $v $(date +%T)"
    PYTHONPATH=/tmp/prof/$v timeout 1200 .venv/bin/python bench/serve/peers/run.py grpc --client lanes --servers lanes --models identity,char_cnn_top1 --repeats 1 --out /tmp/grpcab/$v-$i 2>&1 | grep -v "^\s*$" | tail -8
  done
done
