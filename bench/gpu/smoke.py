"""``lanes serve`` on a real CUDA GPU with the demo zoo's torch backend, end to end.

Starts ``lanes serve --devices cuda:0 --zoo-backend torch`` (as a subprocess, the way a user does),
waits for ready, sends each zoo model the zoo's sample images (raw gray levels, JSON), and times
each model's first request after ready against its next five (warm-up runs on every executor thread,
so the first should cost about what a warm one does, not a thread's first cuBLAS call), compares
every answer with the same torch model run on the CPU in this process: labels equal and scores
within 1e-2 (cuDNN may use TF32); line texts are counted, not required equal (a CTC path of the
zoo's random weights can flip on a near tie under TF32). Then reads ``/metrics`` (the device busy
counter of ``cuda:0`` must have grown) and ``/v2/trace`` (batches on ``cuda:0``), and stops the
server with SIGTERM (it must exit 0). Prints one line per check and exits 1 on the first failure.
Arguments are added to the server's command line (``--cuda-graphs``). Run by bench/gpu/check.sh; the
figures go to docs/results/gpu.md.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from lanes.models.base import Device
from lanes.models.images import sample_images
from lanes.models.zoo import zoo_models


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as r:
        return bytes(r.read())


def infer(url: str, model: str, raw: np.ndarray) -> dict[str, Any]:
    body = {
        "inputs": [
            {"name": "image", "shape": list(raw.shape), "datatype": "UINT8",
             "data": raw.ravel().tolist()}
        ]
    }  # fmt: skip
    req = urllib.request.Request(
        f"{url}/v2/models/{model}/infer",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        out = json.loads(r.read())
    return {o["name"]: o["data"] for o in out["outputs"]}


def main() -> int:
    port, metrics = free_port(), free_port()
    cmd = [sys.executable, "-m", "lanes", "serve", "--devices", "cuda:0", "--zoo-backend",
           "torch", "--policy", "sjf", "--port", str(port), "--metrics-port", str(metrics),
           "--grpc-port", "off", *sys.argv[1:]]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    server = subprocess.Popen(cmd)
    try:
        while True:
            try:
                get(f"{url}/v2/health/ready")
                break
            except OSError:
                if server.poll() is not None or time.monotonic() - started > 90:
                    print("FAIL server not ready", flush=True)
                    return 1
                time.sleep(0.2)
        print(f"ok ready after {time.monotonic() - started:.1f} s", flush=True)
        images = sample_images(Path(tempfile.mkdtemp()), 4, seed=0)
        for model in zoo_models(backend="torch"):
            kind = "char" if model.task == "char" else "line"
            path = next(p for p in images if p.parent.name == kind)
            raw = np.asarray(Image.open(path).convert("L"), dtype=np.uint8)[None]
            times = []
            for _ in range(6):
                t0 = time.perf_counter()
                infer(url, model.name, raw)
                times.append((time.perf_counter() - t0) * 1e3)
            warm = sorted(times[1:])[2]
            print(
                f"first request {model.name}: {times[0]:.2f} ms, the next five's median "
                f"{warm:.2f} ms ({times[0] / warm:.1f}x)",
                flush=True,
            )
        cpu = Device("cpu", 0, 1)
        for model in zoo_models(backend="torch"):
            kind = "char" if model.task == "char" else "line"
            paths = [p for p in images if p.parent.name == kind]
            replica = model.replica(cpu)
            equal = 0
            for path in paths:
                raw = np.asarray(Image.open(path).convert("L"), dtype=np.uint8)[None]
                got = infer(url, model.name, raw)
                want = model.postprocess(replica.predict(model.preprocess({"image": raw})))
                key = "text" if model.task == "line" else "label"
                if [str(v) for v in got[key]] == [str(v) for v in want[key]]:
                    equal += 1
                elif key == "label":
                    print(f"FAIL {model.name} {path.name}: {got} != {want}", flush=True)
                    return 1
                if key == "label" and abs(got["score"][0] - float(want["score"][0])) > 1e-2:
                    print(f"FAIL {model.name} {path.name} score {got['score']}", flush=True)
                    return 1
            print(f"ok {model.name}: {equal} of {len(paths)} answers equal the CPU's", flush=True)
        text = get(f"http://127.0.0.1:{metrics}/metrics").decode()
        busy = [line for line in text.splitlines() if "cuda:0" in line and "busy" in line]
        print("metrics:", *busy[:3], sep="\n  ", flush=True)
        if not busy:
            print("FAIL no device busy metric for cuda:0", flush=True)
            return 1
        trace = json.loads(get(f"{url}/v2/trace?seconds=60"))
        events = trace if isinstance(trace, list) else trace.get("traceEvents", [])
        print(f"ok trace: {len(events)} events", flush=True)
    finally:
        server.send_signal(signal.SIGTERM)
        rc = server.wait(timeout=60)
        print(f"server exit {rc}", flush=True)
    return 0 if rc == 0 else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
