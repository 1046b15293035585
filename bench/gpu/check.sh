#!/usr/bin/env bash
# lanes on a GPU host: the checks docs/results/gpu.md records.
#
#   bench/gpu/check.sh smoke OUT   the host (GPU, driver, torch, onnxruntime's providers), the
#                                  CUDA tests (tests/serving/test_cuda.py, the torch zoo's CUDA
#                                  tests, CUDA graphs among them, device parsing), and lanes serve
#                                  on cuda:0 with the zoo's torch backend answering every zoo
#                                  model, its first request after ready, its metrics and its
#                                  device timeline: eager (smoke.txt) and --cuda-graphs
#                                  (smoke-graphs.txt)
#   bench/gpu/check.sh lab OUT     examples/experiments/gpu.toml (independent, fifo, sjf, fair on
#                                  cuda:0) with lanes bench run; OUT/gpu-lab.tgz holds the folder,
#                                  under its own name
#                                  (LAB_EXPERIMENT=FILE runs another experiment, LAB_ARGS adds
#                                  options such as --repeats 1, LAB_OUT=DIR keeps the folder
#                                  there, so that a second call with LAB_ARGS=--resume finishes
#                                  a lab the first one's LAB_TIMEOUT cut); a lab with request spans also
#                                  gives OUT/spans.md (bench/calibrate/spans.py, bounded by
#                                  SPANS_TIMEOUT seconds, default 60), and its timelines
#                                  are left out of the archive but for two (they are large)
#   bench/gpu/check.sh kernel OUT  bench/gpu/kernel_time.py: each zoo batch's wall, CPU and GPU
#                                  time, and the three OCR models serial vs overlapped, eager
#                                  (kernel.txt) and through CUDA graphs (kernel-graphs.txt)
#
# lanes must be importable (a wheel from `maturin build --release`, or `make setup`;
# bench/gpu/with_wheels.sh installs the wheels on a host without a network and runs this). Every step
# is bounded by `timeout`, writes its output under OUT, and a failed step does not stop the next.
set -u
mode=${1:?usage: check.sh smoke|lab|kernel OUT}
out=${2:?usage: check.sh smoke|lab|kernel OUT}
mkdir -p "$out"
py=${PYTHON:-python3}

if [ "$mode" = smoke ]; then
  {
    date -u; nproc; lscpu | grep 'Model name'
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    "$py" -V
    "$py" -c 'import torch, onnxruntime as o, lanes._core as c; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.device_count()); print("onnxruntime", o.__version__, o.get_available_providers()); print("lanes", c.version())'
  } > "$out/env.txt" 2>&1
  timeout 240 "$py" -m pytest -q -rs -p no:cacheprovider tests/serving/test_cuda.py \
    tests/models/test_zoo_torch.py tests/serving/test_devices.py > "$out/pytest.txt" 2>&1
  echo "pytest rc $?" >> "$out/pytest.txt"
  timeout 120 "$py" bench/gpu/smoke.py > "$out/smoke.txt" 2>&1
  echo "smoke rc $?" >> "$out/smoke.txt"
  timeout 120 "$py" bench/gpu/smoke.py --cuda-graphs > "$out/smoke-graphs.txt" 2>&1
  echo "smoke rc $?" >> "$out/smoke-graphs.txt"
elif [ "$mode" = lab ]; then
  lab=${LAB_OUT:-$(mktemp -d)/gpu-lab}
  timeout "${LAB_TIMEOUT:-420}" "$py" -m lanes bench run "${LAB_EXPERIMENT:-examples/experiments/gpu.toml}" \
    --out "$lab" ${LAB_ARGS:-} > "$out/lab.txt" 2>&1
  echo "lab rc $?" >> "$out/lab.txt"
  cp "$lab/summary.json" "$out/" 2>/dev/null
  if grep -qs trace-requests "$lab/experiment.toml"; then
    timeout "${SPANS_TIMEOUT:-60}" "$py" bench/calibrate/spans.py "$lab" --markdown "$out/spans.md" \
      --json "$out/waits.json" > "$out/spans.txt" 2>&1
    echo "spans rc $?" >> "$out/spans.txt"
    find "$lab/runs" -name '*.trace.json' | sort | tail -n +3 | xargs -r rm -f
  fi
  tar czf "$out/gpu-lab.tgz" -C "$(dirname "$lab")" "$(basename "$lab")"
elif [ "$mode" = kernel ]; then
  timeout 180 "$py" bench/gpu/kernel_time.py --json "$out/kernel.json" > "$out/kernel.txt" 2>&1
  echo "kernel rc $?" >> "$out/kernel.txt"
  timeout 180 "$py" bench/gpu/kernel_time.py --graphs --json "$out/kernel-graphs.json" \
    > "$out/kernel-graphs.txt" 2>&1
  echo "kernel rc $?" >> "$out/kernel-graphs.txt"
else
  echo "usage: check.sh smoke|lab|kernel OUT" >&2; exit 2
fi
