#!/bin/bash
# issue 14 measurements of 2026-11-27 (second session): decode cost, the model's compute, the latency floor by both clocks
set -e
cd /work/main
D=/tmp/m14
ORT=$(.venv/bin/python -c 'import glob, os, onnxruntime; print(sorted(glob.glob(os.path.join(os.path.dirname(onnxruntime.__file__), "capi", "libonnxruntime.so*")))[-1])')
echo "start $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD)" | tee $D/times.txt
target/release/examples/decode_time 5 5000 | tee $D/decode_time.txt
echo "decode done $(date -u +%FT%TZ)" | tee -a $D/times.txt
ORT_DYLIB_PATH=$ORT .venv/bin/python bench/serve/onnx_native.py --example target/release/examples/char_cnn_speed --repeats 10 --iters 200 --out $D/onnx-native.json | tail -12 | tee $D/onnx-native.txt
echo "onnx done $(date -u +%FT%TZ)" | tee -a $D/times.txt
.venv/bin/python bench/serve/peers/latency_floor.py --repeats 6 --seconds 8 --oha --out $D/floor 2>&1 | tail -20 | tee $D/floor.txt
echo "end $(date -u +%FT%TZ)" | tee -a $D/times.txt
