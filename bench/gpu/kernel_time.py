"""Where a zoo batch's time goes on a CUDA GPU, and whether overlapping batches only wait there.

The lab measures a batch from the executor's side: the time ``TorchZooModel.predict`` takes
(copy in, the network, copy out). This script splits that time for the demo zoo's torch backend
on ``cuda:0`` (or ``--device``), with nothing else running:

1. **Per batch**, for each model and batch size (``--sizes``): the median wall time of one call
   made as ``predict`` makes it (``torch.from_numpy(x).to(dev)``, the module under
   ``inference_mode``, ``.cpu()``), the calling thread's CPU time in it, and the GPU's own busy
   time in it: the sum of the call's kernel and copy durations from ``torch.profiler``'s CUDA
   activity, divided by the calls profiled. ``gpu / wall`` is the share of a batch that the
   device works; the rest is the host launching, copying and waiting.
2. **Overlap**, the field reports' test: the three OCR models run for ``--seconds`` each
   (a) one after another from one thread — one job on the device at a time, as ``fifo``/``sjf``
   — and (b) from three threads at once — each model launching whenever it has work, as
   ``independent``. Batches per second of each model and in all. If the device were the
   bottleneck, (b) would complete no more work than (a): overlapping work only waits.

With ``--graphs`` every call goes through :class:`lanes.models.cuda_graphs.GraphRunner` as
``lanes serve --cuda-graphs`` runs it (a CUDA graph per shape and thread, captured before the
timing; each overlap thread captures its own): the same two tests with the launches gone.

Prints a table and writes ``--json FILE``. Run by bench/gpu/check.sh (``kernel`` form); the
figures go to docs/results/gpu.md. Needs torch with CUDA (or ``--device cpu`` to try it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from typing import Any

import numpy as np

from lanes.models.cuda_graphs import GraphRunner
from lanes.models.zoo import spec
from lanes.models.zoo_torch import import_torch, torch_module

MODELS = ("char_cnn", "line_rnn_zh", "line_rnn_en")


class Net:
    """One model's batch call as ``TorchZooModel.predict`` makes it: eager
    (``torch.from_numpy(x).to(dev)``, the module, ``.cpu()``) or through a ``GraphRunner``."""

    def __init__(self, torch: Any, module: Any, dev: Any, name: str, graphs: bool) -> None:
        self.torch, self.module, self.dev = torch, module, dev
        self.graphs = GraphRunner(torch, module, dev, name) if graphs else None

    def __call__(self, x: np.ndarray) -> Any:
        with self.torch.inference_mode():
            if self.graphs is not None:
                return self.graphs(x)
            return self.module(self.torch.from_numpy(x).to(self.dev)).cpu().numpy()


def gpu_seconds(torch: Any, net: Any, x: np.ndarray, dev: Any, calls: int) -> float | None:
    """The device's busy time per call (kernels and copies), from the profiler's CUDA activity;
    None on the CPU or when the profiler cannot read it."""
    if dev.type != "cuda":
        return None
    from torch.profiler import ProfilerActivity, profile

    try:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                net(x)
            torch.cuda.synchronize(dev)
        total_us = 0.0
        for event in prof.key_averages():
            total_us += float(
                getattr(event, "self_device_time_total", None)
                or getattr(event, "self_cuda_time_total", 0.0)
            )
        return total_us / 1e6 / calls
    except Exception as err:  # the profiler is a diagnosis aid: report and go on
        print(f"  profiler unavailable: {err}")
        return None


def per_batch(torch: Any, nets: dict[str, Any], dev: Any, sizes: list[int], calls: int) -> list:
    rows = []
    for name, net in nets.items():
        s = spec(name)
        for n in sizes:
            if n > s.max_batch_size:
                continue
            x = np.random.default_rng(0).random((n, *s.input_shape), dtype=np.float32)
            for _ in range(5):
                net(x)
            walls, cpus = [], []
            for _ in range(calls):
                t0, c0 = time.perf_counter(), time.thread_time()
                net(x)
                walls.append(time.perf_counter() - t0)
                cpus.append(time.thread_time() - c0)
            gpu = gpu_seconds(torch, net, x, dev, calls)
            wall = statistics.median(walls)
            row = {
                "model": name,
                "batch": n,
                "wall_ms": wall * 1e3,
                "cpu_ms": statistics.median(cpus) * 1e3,
                "gpu_ms": None if gpu is None else gpu * 1e3,
                "gpu_share": None if gpu is None else gpu / wall,
            }
            rows.append(row)
            g = "-" if gpu is None else f"{gpu * 1e3:7.3f}"
            share = "-" if gpu is None else f"{gpu / wall:5.2f}"
            print(
                f"  {name:12s} batch {n:2d}  wall {wall * 1e3:7.3f} ms  "
                f"thread cpu {row['cpu_ms']:7.3f} ms  gpu {g} ms  gpu/wall {share}"
            )
    return rows


def overlap(nets: dict[str, Any], batch: int, seconds: float) -> dict:
    """Batches per second of each model, serial (one thread, round robin) and overlapped (one
    thread per model), each for ``seconds``."""
    inputs = {}
    for name in nets:
        s = spec(name)
        n = min(batch, s.max_batch_size)
        inputs[name] = np.random.default_rng(1).random((n, *s.input_shape), dtype=np.float32)

    serial = dict.fromkeys(nets, 0)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for name, net in nets.items():
            net(inputs[name])
            serial[name] += 1

    together = dict.fromkeys(nets, 0)
    start = threading.Barrier(len(nets) + 1)
    stop = threading.Event()

    def worker(name: str) -> None:
        for _ in range(3):  # this thread's graphs (with --graphs) and handles, before the clock
            nets[name](inputs[name])
        start.wait()
        while not stop.is_set():
            nets[name](inputs[name])
            together[name] += 1

    threads = [threading.Thread(target=worker, args=(name,)) for name in nets]
    for t in threads:
        t.start()
    start.wait()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    result = {
        "batch": {k: int(v.shape[0]) for k, v in inputs.items()},
        "seconds": seconds,
        "serial_per_s": {k: v / seconds for k, v in serial.items()},
        "overlapped_per_s": {k: v / seconds for k, v in together.items()},
    }
    total_serial = sum(result["serial_per_s"].values())
    total_together = sum(result["overlapped_per_s"].values())
    result["ratio"] = total_together / total_serial if total_serial else None
    for name in nets:
        print(
            f"  {name:12s} batches/s  serial {result['serial_per_s'][name]:8.1f}  "
            f"overlapped {result['overlapped_per_s'][name]:8.1f}"
        )
    print(f"  all          batches/s  serial {total_serial:8.1f}  overlapped {total_together:8.1f}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--sizes", default="1,4,8,16")
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--batch", type=int, default=8, help="batch size of the overlap test")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--json", default=None)
    parser.add_argument(
        "--graphs", action="store_true", help="call through CUDA graphs (lanes serve --cuda-graphs)"
    )
    args = parser.parse_args()

    torch = import_torch("char_cnn")
    dev = torch.device(args.device)
    nets = {name: Net(torch, torch_module(name).to(dev), dev, name, args.graphs) for name in MODELS}
    info: dict[str, Any] = {"device": str(dev), "torch": torch.__version__, "graphs": args.graphs}
    if dev.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(dev)
        info["tf32_cudnn"] = bool(torch.backends.cudnn.allow_tf32)
    print(json.dumps(info))
    print("per batch (medians):")
    rows = per_batch(torch, nets, dev, [int(v) for v in args.sizes.split(",")], args.calls)
    print(f"overlap, batch {args.batch}:")
    result = {
        **info,
        "per_batch": rows,
        "overlap": overlap(nets, args.batch, args.seconds),
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
