"""Speed check of lanes-onnx against Python onnxruntime: char_cnn at batch 16, one intra-op thread.

Not a test: figures for docs/results/serving.md ("native ONNX execution (lanes-onnx)"). Both sides
load the same ONNX file with the same options (1 intra-op thread, 1 inter-op thread, sequential,
no spinning, every graph optimisation) and run the same 16 rows (the char_cnn_batch16 case of
crates/lanes-onnx/tests/fixtures/generated, written by ``make onnx-fixtures``):

- Rust ``run_batch``: 16 requests of ``[1, 1, 32, 32]`` assembled, run, split (the example
  ``char_cnn_speed`` of lanes-onnx, a process of its own per repeat);
- Rust ``run``: the same rows as one ``[16, 1, 32, 32]`` tensor;
- Python ``concat+run``: ``np.concatenate`` of the 16 requests' arrays, then ``session.run``;
- Python ``run``: ``session.run`` on the prebuilt ``[16, 1, 32, 32]`` array.

Each repeat measures the median of ``--iters`` calls per kind after 20 warm-up calls, wall-clock
and CPU time of the calling thread (with one intra-op thread ONNX Runtime computes on the
caller, so the CPU time is the run's own work, less disturbed by other processes than the wall
clock); repeats alternate which side goes first (Rust, Python; Python, Rust; ...). The host is
shared and noisy: compare the per-repeat ratios and their median, not one figure. Writes JSON
to ``--out``.

    make bench-onnx    # builds the example, then runs this with ORT_DYLIB_PATH from .venv
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "crates/lanes-onnx/tests/fixtures/generated"


def requests() -> list[Any]:
    cases = json.loads((FIXTURES / "cases.json").read_text())
    case = next(c for c in cases if c["name"] == "char_cnn_batch16")
    rows = []
    for request in case["requests"]:
        (x,) = request["inputs"]
        data = np.frombuffer((FIXTURES / x["file"]).read_bytes(), dtype="<f4")
        rows.append(data.reshape(x["shape"]))
    return rows


def python_session() -> Any:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(
        str(FIXTURES / "char_cnn/model.onnx"),
        sess_options=options,
        providers=["CPUExecutionProvider"],
    )


def medians_us(fn: Any, iters: int) -> tuple[float, float]:
    """Medians of ``iters`` calls after 20 warm-up calls: (wall µs, this thread's CPU µs)."""
    for _ in range(20):
        fn()
    wall, cpu = [], []
    for _ in range(iters):
        start, start_cpu = time.perf_counter_ns(), time.thread_time_ns()
        fn()
        wall.append((time.perf_counter_ns() - start) / 1e3)
        cpu.append((time.thread_time_ns() - start_cpu) / 1e3)
    return statistics.median(wall), statistics.median(cpu)


def python_side(session: Any, rows: list[Any], iters: int) -> dict[str, float]:
    whole = np.concatenate(rows)
    concat_run = medians_us(lambda: session.run(None, {"x": np.concatenate(rows)}), iters)
    run = medians_us(lambda: session.run(None, {"x": whole}), iters)
    return {
        "concat_run_us": concat_run[0],
        "concat_run_cpu_us": concat_run[1],
        "run_us": run[0],
        "run_cpu_us": run[1],
    }


def rust_side(example: Path, input_file: Path, iters: int) -> dict[str, float]:
    model = FIXTURES / "char_cnn/model.onnx"
    out = subprocess.run(
        [str(example), str(model), str(input_file), str(iters)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--example", type=Path, required=True, help="the char_cnn_speed binary")
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--out", type=Path, default=Path("onnx_native.json"))
    args = parser.parse_args()
    rows = requests()
    session = python_session()
    repeats = []
    with tempfile.TemporaryDirectory() as tmp:
        input_file = Path(tmp) / "x16.bin"
        input_file.write_bytes(np.concatenate(rows).astype("<f4").tobytes())
        for i in range(args.repeats):
            entry: dict[str, Any] = {"repeat": i, "load_before": load()}
            sides = ["rust", "python"] if i % 2 == 0 else ["python", "rust"]
            for side in sides:
                if side == "rust":
                    entry["rust"] = rust_side(args.example, input_file, args.iters)
                else:
                    entry["python"] = python_side(session, rows, args.iters)
            entry["order"] = sides
            py, rs = entry["python"], entry["rust"]
            entry["ratio_batch"] = py["concat_run_us"] / rs["run_batch_us"]
            entry["ratio_run"] = py["run_us"] / rs["run_us"]
            entry["ratio_batch_cpu"] = py["concat_run_cpu_us"] / rs["run_batch_cpu_us"]
            entry["ratio_run_cpu"] = py["run_cpu_us"] / rs["run_cpu_us"]
            print(json.dumps(entry), flush=True)
            repeats.append(entry)

    def med(side: str, key: str) -> float:
        return float(statistics.median(r[side][key] for r in repeats))

    summary: dict[str, float] = {}
    for side, keys in (
        ("rust", ("run_batch_us", "run_batch_cpu_us", "run_us", "run_cpu_us")),
        ("python", ("concat_run_us", "concat_run_cpu_us", "run_us", "run_cpu_us")),
    ):
        for key in keys:
            summary[f"{side}_{key}"] = med(side, key)
    for ratio in ("ratio_batch", "ratio_run", "ratio_batch_cpu", "ratio_run_cpu"):
        summary[f"{ratio}_median"] = float(statistics.median(r[ratio] for r in repeats))
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "nproc": os.cpu_count(),
        "kernel": platform.release(),
        "cpu": next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            platform.processor(),
        ),
        "onnxruntime": ort.__version__,
        "library": os.environ.get("ORT_DYLIB_PATH", ""),
        "iters": args.iters,
        "repeats": args.repeats,
    }
    print(json.dumps({"summary": summary, "meta": meta}))
    args.out.write_text(
        json.dumps({"meta": meta, "summary": summary, "repeats": repeats}, indent=1) + "\n"
    )


if __name__ == "__main__":
    main()
