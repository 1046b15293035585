"""Calibration figures for ``lanes sim``: this host's CPU devices as ``lanes serve`` runs them.

``lanes serve --devices cpu:2 --cpu-threads 1`` gives one ONNX Runtime executor per core, each
runtime with one intra-op thread: devices that behave like GPUs. This script measures what a
simulator scenario of that host needs (examples/scenarios/cpu-2core.toml), for the demo zoo's
models ``char_cnn``, ``line_rnn_zh`` and ``line_rnn_en``:

1. **Device cost of a batch** of n items, n = 1, 2, 4, ... up to each model's ``max_batch_size``:
   what a device thread of ``lanes serve`` runs for one batch of the native zoo (lanes-server's
   ``ZooRunner::run``: collate, the ONNX Runtime call, split), on one core, one intra-op thread,
   after warm-up. Reported as median, mean, p10/p90, cv (standard deviation ÷ mean) and robust
   cv (1.4826·MAD ÷ median) over the rounds, and the median of the thread's CPU time.
2. **Per-request CPU cost** of the steps the native server runs around it: ``pre`` and ``post``
   = the zoo's hooks on the hook pool (``ZooHooks::preprocess``: decode the PNG, ink, resize;
   ``ZooHooks::postprocess``: softmax/argmax or CTC greedy decoding), ``wire_decode`` and
   ``encode`` = ``decode_request`` of the REST body and ``encode_response`` (I/O threads).
   Inputs are the demo load generator's requests: the lab's corpus (``sample_images(..., 8,
   seed=0)`` → ``kserve_requests(model, ..., input_name="image")``, binary tensor data).

   Stages 1 and 2 run natively, interleaved, on one pinned core: this script writes the models
   (as ``lanes serve --demo --devices cpu:2 --cpu-threads 1`` loads them) and the corpus into a
   spec and runs crates/lanes-server/examples/zoo_cost.rs, which times the server's own Rust
   code: every round runs every (model, n) batch once and every corpus request's steps once, in
   a shuffled order. This machine's speed drifts by ±25 % between windows of a few seconds (a VM
   sharing its host), so costs measured in separate windows are not comparable; interleaved,
   every figure sees the same drift. (Until 2026-11-26 these stages timed the removed Python
   server's steps: ``collate`` → ``predict`` → ``split`` and ``preprocess``/``postprocess`` in
   Python.)
3. **Contention η(k)**: k worker processes, each with its own runtimes (1 intra-op thread), all
   pinned to ONE core with ``os.sched_setaffinity``, share a fixed amount of work (the same
   model and batch size); η(k) = total throughput with k ÷ throughput with 1 (the simulator's
   ``host.eta``: "GPU throughput with k jobs overlapping is eta[k-1]"). Throughput is work ÷
   makespan (common start to the last worker's end). Also 2 workers on 2 different cores vs 1
   (``two_cores``, the sum of the two workers' own rates: ~2 when the cores are independent
   devices). Processes, not threads, so the GIL plays no part. The arrangements of one workload
   are run back to back in a shuffled order, each ratio is taken within one repeat, and the
   median over repeats is reported. ``eta_cpu`` is the same ratio per CPU second the workers
   used instead of per wall second: it shows what overlapping costs in CPU work (context
   switches, caches) apart from time lost to other processes on the core. ``mix``: the same
   for *different* models overlapping (char_cnn, line_rnn_zh, line_rnn_en, char_cnn for
   k = 2..4 at batch 1 — what ``--policy independent`` overlaps): the same work run by one
   worker with the models interleaved round-robin (as a serialising scheduler runs them on a
   device) ÷ run by k overlapping workers; it runs first.

Models are picked exactly as ``lanes serve --demo --devices cpu:2 --cpu-threads 1`` picks them:
``lanes.serving.server.load_models(ServeConfig(...))`` for the zoo (its ONNX files, tasks,
labels and batching), ``lanes.serving.devices.parse_devices`` for the devices; stage 3's
processes run the same ONNX files through onnxruntime's Python API (``model.replica(device)``:
the same runtime library and session options as the native runner, 1 intra-op thread).

The machine is shared: the 1/5/15-minute load average is recorded before and after, and for each
stage the CPU time others used (``foreign``: all cores' busy time from /proc/stat less this
script's processes), the hypervisor's ``steal``, in % of all cores, and each core's busy %.
Stages 1-2 keep the samples that were not preempted (wall time within 5 % + 20 µs of the
thread's CPU time; ``clean`` is their fraction; with under a fifth clean, all are used and the
figure is marked ``noisy``). Stage 3 checks every run: a repeat is *clean* when others used (or
the hypervisor stole) at most 5 % of the cores it ran on; ratios come from clean repeats (the
full run tries up to twice the planned repeats to find them, within a time budget), else from
all (``noisy``). ``--wait-load L`` waits (at
most ``--wait-max`` seconds) for the 1-minute load average to fall below L before starting,
``--wait-quiet PCT`` for the cores to be at most PCT % busy over 5 s (the load average lags by
minutes); ``--stages contention`` re-runs stage 3 alone.

Usage (first ``cargo build --release -p lanes-server --example zoo_cost``)::

    .venv/bin/python bench/calibrate/measure.py                  # ~3 minutes
    .venv/bin/python bench/calibrate/measure.py --quick          # ~30 seconds, rougher
    .venv/bin/python bench/calibrate/measure.py --wait-quiet 10 --out run1.json
    .venv/bin/python bench/calibrate/measure.py --stages contention --out run2.json
    .venv/bin/python bench/calibrate/measure.py --merge run*.json --out merged.json

``--merge`` measures nothing: it folds earlier runs into one (every figure the median over the
runs that measured it; a contention workload over the runs where it came out clean) and prints
the same tables. docs/results/calibration.md has the figures of this host.

Writes JSON (default bench/calibrate/out/measure.json; ``--out`` a file or a folder) and prints
the tables as Markdown, then the figures as ``lanes sim`` scenario lines (``scenario_toml`` in
the JSON). Bounded: stages 1-2 run a fixed number of rounds, stage 3 a fixed amount of work per
run sized from stage 1's medians, within a time budget.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import multiprocessing as mp
import os
import platform
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

MODELS: tuple[str, ...] = ("char_cnn", "line_rnn_zh", "line_rnn_en")
"""The demo mix's models (60 / 25 / 15 % of requests)."""
SIZES: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
"""Batch sizes measured, up to each model's max_batch_size."""
KS: tuple[int, ...] = (1, 2, 3, 4)
"""Runtimes overlapped on one core."""
STAGES: tuple[str, ...] = ("costs", "contention")
"""The stages, in the order they run (``--stages`` picks some)."""
ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = Path(__file__).resolve().parent / "out" / "measure.json"


@dataclass(frozen=True)
class Plan:
    """How much to measure: the full run or ``--quick``."""

    rounds: int
    """Stages 1 and 2: interleaved rounds (each runs every (model, n) batch and every corpus
    request's pre/post once)."""
    eta_seconds: float
    """Stage 3: the solo duration of one arrangement's work."""
    eta_repeats: int
    """Stage 3: clean repeats wanted of every workload."""
    eta_max_repeats: int
    """Stage 3: most repeats run per workload while looking for clean ones."""
    eta_workloads: tuple[tuple[str, int], ...]
    """Stage 3: (model, batch size) pairs; one max-batch pair per model is added at run time."""


FULL = Plan(
    rounds=151,
    eta_seconds=0.5,
    eta_repeats=5,
    eta_max_repeats=10,
    eta_workloads=(("char_cnn", 1), ("line_rnn_zh", 1), ("line_rnn_en", 1)),
)
QUICK = Plan(
    rounds=41,
    eta_seconds=0.3,
    eta_repeats=3,
    eta_max_repeats=3,
    eta_workloads=(("char_cnn", 1), ("line_rnn_zh", 1)),
)


# -- statistics ---------------------------------------------------------------------------------


def summary(values_ms: list[float]) -> dict[str, float]:
    """Median, mean, p10, p90, cv (stdev ÷ mean) and a robust cv (1.4826·MAD ÷ median)."""
    xs = sorted(values_ms)
    med = statistics.median(xs)
    mean = statistics.fmean(xs)
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    mad = statistics.median(abs(x - med) for x in xs)

    def q(p: float) -> float:
        return xs[min(len(xs) - 1, max(0, round(p * (len(xs) - 1))))]

    return {
        "median_ms": med,
        "mean_ms": mean,
        "p10_ms": q(0.10),
        "p90_ms": q(0.90),
        "cv": sd / mean if mean > 0 else 0.0,
        "robust_cv": 1.4826 * mad / med if med > 0 else 0.0,
        "samples": len(xs),
    }


PREEMPTED_FRACTION = 0.05
"""A timed step counts as preempted (another thread ran on its core meanwhile) when its wall
time exceeds its thread's CPU time by more than this fraction (plus 20 µs)."""


def clean_summary(samples: list[tuple[float, float]]) -> dict[str, Any]:
    """:func:`summary` of the wall times (ms) of ``(wall, cpu)`` samples that were not
    preempted (:data:`PREEMPTED_FRACTION`), with ``clean`` (their fraction) and the median and
    mean of all samples; when fewer than a fifth (or 10) are clean, of all (``noisy``)."""
    clean = [w for w, c in samples if w - c <= PREEMPTED_FRACTION * w + 0.02]
    walls = [w for w, _ in samples]
    noisy = len(clean) < max(10, len(samples) / 5)
    out: dict[str, Any] = summary(walls if noisy else clean)
    out["clean"] = round(len(clean) / len(samples), 3)
    out["noisy"] = noisy
    out["all_median_ms"] = statistics.median(walls)
    out["all_mean_ms"] = statistics.fmean(walls)
    out["cpu_median_ms"] = statistics.median(c for _, c in samples)
    return out


# -- machine and noise --------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """nproc, the CPU model name, threads per core, library versions."""
    import onnxruntime as ort  # type: ignore[import-untyped, unused-ignore]

    info: dict[str, Any] = {
        "nproc": os.cpu_count(),
        "affinity": sorted(os.sched_getaffinity(0)),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "onnxruntime": ort.__version__,
        "kernel": platform.release(),
    }
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    for line in out.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("Model name", "Thread(s) per core", "Hypervisor vendor"):
            info[key.strip()] = value.strip()
    return info


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _cpu_ticks() -> dict[str, tuple[int, int, int]]:
    """(busy, steal, total) jiffies of all cores (``cpu``) and of each core (``cpu0``, ...),
    from /proc/stat."""
    out: dict[str, tuple[int, int, int]] = {}
    with open("/proc/stat") as f:
        for line in f:
            if not line.startswith("cpu"):
                break
            name, *rest = line.split()
            fields = [int(x) for x in rest]
            user, nice, system, idle, iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
            busy = user + nice + system + irq + softirq
            out[name] = (busy, steal, busy + idle + iowait + steal)
    return out


def _proc_ticks(pid: int) -> int:
    """utime + stime of process ``pid`` in jiffies (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            tail = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(tail[11]) + int(tail[12])


def _children_ticks() -> int:
    """CPU ticks of this script's finished children (the native timer of stages 1-2)."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return round((ru.ru_utime + ru.ru_stime) * os.sysconf("SC_CLK_TCK"))


class Noise:
    """CPU time used by others (and stolen by the hypervisor) while one stage runs: ``foreign``
    is all cores' busy time less this script's processes, in % of all cores' time; ``busy`` each
    core's busy time (ours included) in % of that core's time."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.cpu0 = _cpu_ticks()
        self.own0 = sum(_proc_ticks(p) for p in pids) + _children_ticks()

    def done(self) -> dict[str, Any]:
        cpu1 = _cpu_ticks()
        own1 = sum(_proc_ticks(p) for p in self.pids) + _children_ticks()

        def delta(name: str) -> tuple[int, int, int]:
            a, b = self.cpu0[name], cpu1[name]
            return b[0] - a[0], b[1] - a[1], max(1, b[2] - a[2])

        busy, steal, total = delta("cpu")
        foreign = max(0, busy - (own1 - self.own0))
        cores = sorted((k for k in cpu1 if k != "cpu"), key=lambda k: int(k[3:]))
        return {
            "foreign_cpu_pct": round(100 * foreign / total, 1),
            "steal_pct": round(100 * steal / total, 1),
            "busy_pct_per_core": [round(100 * delta(c)[0] / delta(c)[2], 1) for c in cores],
            "loadavg": loadavg(),
        }


def busy_pct(seconds: float) -> float:
    """All cores' busy share (%, steal included) over the next ``seconds``."""
    b0, s0, t0 = _cpu_ticks()["cpu"]
    time.sleep(seconds)
    b1, s1, t1 = _cpu_ticks()["cpu"]
    return 100 * (b1 - b0 + s1 - s0) / max(1, t1 - t0)


def wait_until(load: float | None, quiet: float | None, max_s: float) -> float:
    """Wait (at most ``max_s``) until the 1-minute load average is below ``load`` and the cores
    were busy (others' work, steal) at most ``quiet`` % over the last 5 s; returns the seconds
    waited. The load average lags by minutes; the busy share does not."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < max_s:
        avg = os.getloadavg()[0]
        busy = busy_pct(5.0) if quiet is not None else 0.0
        if (load is None or avg < load) and (quiet is None or busy <= quiet):
            break
        print(f"# load {avg:.2f}, cores {busy:.0f} % busy: waiting", file=sys.stderr)
        time.sleep(5)
    return round(time.monotonic() - t0, 1)


# -- the models as lanes serve loads them -------------------------------------------------------


def serve_models() -> tuple[dict[str, Any], Any]:
    """The zoo models and the first device of ``lanes serve --demo --devices cpu:2
    --cpu-threads 1``: ``({name: model}, device)``."""
    from lanes.serving.config import ServeConfig
    from lanes.serving.devices import parse_devices
    from lanes.serving.server import load_models

    config = ServeConfig(models=None, devices="cpu:2", cpu_threads=1, zoo_backend="onnx")
    devices = parse_devices(config.devices, threads=config.cpu_threads)
    assert all(d.kind == "cpu" and d.threads == 1 for d in devices), devices
    models = {m.name: m for m in load_models(config) if m.name in MODELS}
    return models, devices[0]


@dataclass
class Request:
    """One corpus request, decoded as the server decodes it."""

    body: bytes
    header_length: int | None
    decoded: Any  # lanes.serving.codec.InferRequest


def corpus(folder: Path, *, write: bool = True) -> dict[str, list[Request]]:
    """The demo load generator's requests per model, as the lab builds them
    (lanes.lab.runner.corpora): 8 glyph and 8 line PNGs, seed 0, binary tensor data; the
    images are drawn into ``folder`` first unless ``write`` is false."""
    from lanes.bench.corpus import kserve_requests
    from lanes.models.images import sample_images
    from lanes.serving.codec import decode_request

    if write:
        sample_images(folder / "images", 8, seed=0)
    out: dict[str, list[Request]] = {}
    for name in MODELS:
        kind = "char" if name in ("char_cnn", "misc_cls") else "line"
        reqs = []
        for entry in kserve_requests(name, folder / "images" / kind, input_name="image"):
            body = base64.b64decode(entry["body_b64"])
            head = entry.get("headers", {}).get("Inference-Header-Content-Length")
            length = int(head) if head is not None else None
            reqs.append(Request(body, length, decode_request(body, length)))
        out[name] = reqs
    return out


def device_work(replica: Any, items: list[Any]) -> Any:
    """What a device thread of lanes serve runs for one batch (dispatcher ``_run.work``)."""
    joined = replica.collate(items)
    outputs = replica.predict(joined)
    return replica.split(outputs, [1] * len(items))


def sizes_of(model: Any) -> list[int]:
    return [n for n in SIZES if n <= max(1, model.batching.max_batch_size)]


# -- stages 1 and 2: batch costs, pre and post, interleaved ----------------------------------


NATIVE = ROOT / "target" / "release" / "examples" / "zoo_cost"
"""The native timer of stages 1 and 2 (crates/lanes-server/examples/zoo_cost.rs), built by
``cargo build --release -p lanes-server --example zoo_cost``."""


def native_spec(
    models: dict[str, Any], requests: dict[str, list[Request]], folder: Path, rounds: int, seed: int
) -> Path:
    """The native timer's spec: each model's ONNX file, task, labels and largest batch as
    ``lanes serve --demo`` serves it, and its corpus request bodies written into ``folder``."""
    spec: dict[str, Any] = {"rounds": rounds, "seed": seed, "models": []}
    for name in MODELS:
        model = models[name]
        bodies = []
        for i, q in enumerate(requests[name]):
            body = folder / f"{name}-{i}.bin"
            body.write_bytes(q.body)
            bodies.append({"body": str(body), "header_length": q.header_length})
        spec["models"].append(
            {
                "name": name,
                "path": str(model.path),
                "task": model.task,
                "labels": list(model.labels),
                "max_batch_size": model.batching.max_batch_size,
                "requests": bodies,
            }
        )
    path = folder / "spec.json"
    path.write_text(json.dumps(spec))
    return path


def costs(
    models: dict[str, Any],
    requests: dict[str, list[Request]],
    folder: Path,
    rounds: int,
    seed: int,
    native: Path = NATIVE,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Stages 1 and 2 together, natively: the timer runs every round every (model, n) batch once
    and every corpus request's wire/pre/post/encode steps once, in a shuffled order, on this
    process's (pinned) core; returns (batch costs, per-request costs)."""
    from lanes.serving.server import _find_onnxruntime_library

    if not native.exists():
        raise SystemExit(
            f"{native} is missing: cargo build --release -p lanes-server --example zoo_cost"
        )
    _find_onnxruntime_library()
    spec = native_spec(models, requests, folder, rounds, seed)
    done = subprocess.run([str(native), str(spec)], capture_output=True, text=True, check=True)
    raw = json.loads(done.stdout)
    out: dict[str, Any] = {}
    for name in MODELS:
        model = models[name]
        rows = []
        for n, samples in sorted(raw["batch"][name].items(), key=lambda kv: int(kv[0])):
            st = clean_summary([(w, c) for w, c in samples])
            st["n"] = int(n)
            st["per_item_ms"] = st["median_ms"] / int(n)
            rows.append(st)
        out[name] = {
            "max_batch_size": model.batching.max_batch_size,
            "batch_timeout_micros": model.batching.batch_timeout_micros,
            "num_batch_threads": model.batching.num_batch_threads,
            "points": rows,
        }
    prepost = {
        name: {
            key: clean_summary([(w, c) for w, c in raw[step][name]])
            for key, step in PREPOST_STEPS.items()
        }
        | {"requests": len(requests[name])}
        for name in MODELS
    }
    return out, prepost


PREPOST_STEPS = {"pre": "pre", "post": "post", "encode": "encode", "wire_decode": "wire"}
"""Per-request steps: the hook pool's ``pre`` and ``post`` (zoo.rs), the I/O thread's
``encode`` (``encode_response``) and ``wire_decode`` (``decode_request``)."""


# -- stage 3: contention ------------------------------------------------------------------------


def worker(conn: Connection, corpus_dir: str) -> None:
    """A contention worker: its own runtimes, loaded as lanes serve loads them. Runs commands
    ``("run", core, jobs, start_at)``, ``jobs`` a list of ``(model, n, batches)`` run
    round-robin (one batch of each job in turn until each has run its count), and answers
    ``(start, end, cpu_run, cpu_all)`` — monotonic seconds of the timed run, and this process's
    CPU seconds over the run and over the whole command — until ``None``."""
    models, device = serve_models()
    requests = corpus(Path(corpus_dir), write=False)
    replicas = {name: m.replica(device) for name, m in models.items()}
    items = {
        name: [replicas[name].preprocess(q.decoded.inputs) for q in requests[name]]
        for name in MODELS
    }
    for name, r in replicas.items():
        for n in sizes_of(r):
            for _ in range(3):
                device_work(r, (items[name] * 32)[:n])
    conn.send("ready")
    while True:
        cmd = conn.recv()
        if cmd is None:
            break
        cpu_all = time.process_time()
        _, core, jobs, start_at = cmd
        os.sched_setaffinity(0, {core})
        work = [(replicas[name], (items[name] * 32)[:n], batches) for name, n, batches in jobs]
        for r, batch, _ in work:
            device_work(r, batch)  # on the new core once
        delay = start_at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        cpu_run = time.process_time()
        start = time.monotonic()
        for i in range(max(b for _, _, b in work)):
            for r, batch, b in work:
                if i < b:
                    device_work(r, batch)
        end = time.monotonic()
        now = time.process_time()
        conn.send((start, end, now - cpu_run, now - cpu_all))
    conn.close()


Span = tuple[float, float, float, float]
"""A worker's answer: (start, end, CPU seconds of the run, CPU seconds of the command)."""


class Workers:
    """Persistent contention workers (spawned, so no runtime state is forked)."""

    def __init__(self, count: int, corpus_dir: Path) -> None:
        ctx = mp.get_context("spawn")
        self.conns: list[Connection] = []
        self.procs: list[Any] = []
        for _ in range(count):
            parent, child = ctx.Pipe()
            p = ctx.Process(target=worker, args=(child, str(corpus_dir)), daemon=True)
            p.start()
            child.close()
            self.conns.append(parent)
            self.procs.append(p)
        for c in self.conns:
            if not c.poll(120) or c.recv() != "ready":
                raise RuntimeError("a contention worker did not start within 120 s")

    @property
    def pids(self) -> list[int]:
        return [int(p.pid) for p in self.procs]

    def run(self, plan: list[tuple[int, list[tuple[str, int, int]]]]) -> tuple[list[Span], float]:
        """Worker i runs ``plan[i]`` = (core, [(model, n, batches), ...]) on that core (its jobs
        round-robin), all from a common start; returns each worker's :data:`Span` and the share
        (%) of the cores' time that others used or the hypervisor stole meanwhile."""
        used = sorted({core for core, _ in plan})
        before = _cpu_ticks()
        start_at = time.monotonic() + 0.1
        for conn, (core, jobs) in zip(self.conns, plan, strict=False):
            conn.send(("run", core, jobs, start_at))
        spans = [conn.recv() for conn in self.conns[: len(plan)]]
        after = _cpu_ticks()
        busy = steal = total = 0
        for c in used:
            b0, s0, t0 = before[f"cpu{c}"]
            b1, s1, t1 = after[f"cpu{c}"]
            busy, steal, total = busy + b1 - b0, steal + s1 - s0, total + t1 - t0
        ours = sum(sp[3] for sp in spans) * os.sysconf("SC_CLK_TCK")
        return spans, 100 * (max(0.0, busy - ours) + steal) / max(1, total)

    def close(self) -> None:
        for c in self.conns:
            c.send(None)
        for p in self.procs:
            p.join(timeout=10)
            if p.is_alive():
                p.terminate()


CLEAN_PCT = 5.0
"""Stage 3: a repeat counts as clean when, in each of its runs, others used (or the hypervisor
stole) at most this share of the cores the run used."""
MIN_CLEAN = 3
"""Stage 3: with fewer clean repeats than this, every repeat is used (and ``noisy`` is set)."""


def contention(
    workers: Workers,
    workloads: list[tuple[str, int]],
    solo_ms: dict[tuple[str, int], float],
    plan: Plan,
    cores: list[int],
    rng: random.Random,
) -> dict[str, Any]:
    """η(k) per workload and the two-core ratio; see the module docs. Each workload runs
    ``plan.eta_repeats`` repeats, and more while repeats come out unclean (:data:`CLEAN_PCT`),
    up to ``plan.eta_max_repeats`` and while the stage's time budget lasts; ratios come from
    clean repeats."""
    one, other = cores[0], cores[-1]
    arrangements: list[tuple[str, list[int]]] = [(f"k{k}", [one] * k) for k in KS]
    if other != one:
        arrangements.append(("two_cores", [one, other]))
    per_repeat_s = (len(KS) + 0.5) * plan.eta_seconds + len(arrangements) * 0.15
    deadline = time.monotonic() + 1.6 * plan.eta_repeats * per_repeat_s * len(workloads)
    results = []
    for w, (name, n) in enumerate(workloads):
        total = max(8, round(plan.eta_seconds * 1000 / solo_ms[(name, n)]))
        # Its share of the budget: what is left, divided among the workloads still to run.
        until = time.monotonic() + (deadline - time.monotonic()) / (len(workloads) - w)
        reps: list[dict[str, Any]] = []
        while len(reps) < plan.eta_max_repeats:
            clean = [r for r in reps if r["clean"]]
            if len(clean) >= plan.eta_repeats:
                break
            if len(reps) >= plan.eta_repeats and time.monotonic() + per_repeat_s > until:
                break
            order = arrangements[:]
            rng.shuffle(order)
            tput: dict[str, float] = {}  # items per wall second
            eff: dict[str, float] = {}  # items per CPU second of the workers
            disturbed = 0.0
            for label, cs in order:
                per = math.ceil(total / len(cs))
                spans, others = workers.run([(c, [(name, n, per)]) for c in cs])
                disturbed = max(disturbed, others)
                if len(set(cs)) == 1:  # one core: the work of all over the makespan
                    makespan = max(sp[1] for sp in spans) - min(sp[0] for sp in spans)
                    tput[label] = per * len(cs) * n / makespan
                else:  # separate cores: each worker's own rate, summed
                    tput[label] = sum(per * n / (sp[1] - sp[0]) for sp in spans)
                eff[label] = per * len(cs) * n / sum(sp[2] for sp in spans)
            reps.append(
                {
                    "tput": tput,
                    "eff": eff,
                    "others_pct": round(disturbed, 1),
                    "clean": disturbed <= CLEAN_PCT,
                }
            )
        clean = [r for r in reps if r["clean"]]
        noisy = len(clean) < MIN_CLEAN
        use = reps if noisy else clean

        def ratios(key: str, rs: list[dict[str, Any]] = use) -> list[list[float]]:
            return [[r[key][f"k{k}"] / r[key]["k1"] for k in KS] for r in rs]

        def medians(rows: list[list[float]]) -> list[float]:
            return [statistics.median(e[i] for e in rows) for i in range(len(KS))]

        eta_reps, eff_reps = ratios("tput"), ratios("eff")
        row: dict[str, Any] = {
            "model": name,
            "n": n,
            "batches": total,
            "repeats": len(reps),
            "clean_repeats": len(clean),
            "noisy": noisy,
            "others_pct": [r["others_pct"] for r in reps],
            "solo_items_per_s": statistics.median(r["tput"]["k1"] for r in use),
            "eta": medians(eta_reps),
            "eta_repeats": eta_reps,
            "eta_cpu": medians(eff_reps),
            "eta_cpu_repeats": eff_reps,
        }
        if other != one:
            two = [r["tput"]["two_cores"] / r["tput"]["k1"] for r in use]
            two_cpu = [r["eff"]["two_cores"] / r["eff"]["k1"] for r in use]
            row["two_cores"] = statistics.median(two)
            row["two_cores_repeats"] = two
            row["two_cores_cpu"] = statistics.median(two_cpu)
        results.append(row)
    out: dict[str, Any] = {
        "workloads": results,
        "eta": [statistics.median(r["eta"][i] for r in results) for i in range(len(KS))],
        "eta_cpu": [statistics.median(r["eta_cpu"][i] for r in results) for i in range(len(KS))],
        "cores": [one, other],
        "clean_pct": CLEAN_PCT,
    }
    if other != one:
        out["two_cores"] = statistics.median(r["two_cores"] for r in results)
        out["two_cores_cpu"] = statistics.median(r["two_cores_cpu"] for r in results)
    return out


MIX: tuple[str, ...] = ("char_cnn", "line_rnn_zh", "line_rnn_en", "char_cnn")
"""Stage 3's mixed workload: k = 2..4 different runtimes at batch 1, worker i running ``MIX[i]``
— what ``--policy independent`` overlaps (each model its own worker on every device)."""


def contention_mix(
    workers: Workers,
    solo_ms: dict[tuple[str, int], float],
    plan: Plan,
    core: int,
    rng: random.Random,
) -> dict[str, Any]:
    """η(k) for different models on one core: the same work (``MIX[:k]``, batch 1, each job
    sized to an equal share of ``plan.eta_seconds``) run by ONE worker round-robin — models
    interleaved on the core one batch at a time, as a scheduler that serialises them runs it —
    and by k workers at once (overlapping, time-sliced by the OS); η(k) = the one worker's
    makespan ÷ the k workers'. Repeats, cleanliness and budget as in :func:`contention`."""
    runs: list[tuple[str, list[tuple[int, list[tuple[str, int, int]]]]]] = []
    for k in KS[1:]:
        jobs = [
            (m, 1, max(4, round(plan.eta_seconds * 1000 / (k * solo_ms[(m, 1)])))) for m in MIX[:k]
        ]
        runs.append((f"serial{k}", [(core, jobs)]))
        runs.append((f"overlap{k}", [(core, [job]) for job in jobs]))
    per_repeat_s = len(runs) * (plan.eta_seconds + 0.15)
    until = time.monotonic() + 1.6 * plan.eta_repeats * per_repeat_s
    reps: list[dict[str, Any]] = []
    while len(reps) < plan.eta_max_repeats:
        if sum(r["clean"] for r in reps) >= plan.eta_repeats:
            break
        if len(reps) >= plan.eta_repeats and time.monotonic() + per_repeat_s > until:
            break
        order = runs[:]
        rng.shuffle(order)
        span: dict[str, float] = {}
        disturbed = 0.0
        for label, arrangement in order:
            spans, others = workers.run(arrangement)
            span[label] = max(sp[1] for sp in spans) - min(sp[0] for sp in spans)
            disturbed = max(disturbed, others)
        eta = [1.0] + [span[f"serial{k}"] / span[f"overlap{k}"] for k in KS[1:]]
        reps.append(
            {"eta": eta, "others_pct": round(disturbed, 1), "clean": disturbed <= CLEAN_PCT}
        )
    clean = [r for r in reps if r["clean"]]
    noisy = len(clean) < MIN_CLEAN
    use = reps if noisy else clean
    return {
        "models": list(MIX),
        "n": 1,
        "repeats": len(reps),
        "clean_repeats": len(clean),
        "noisy": noisy,
        "others_pct": [r["others_pct"] for r in reps],
        "eta": [statistics.median(r["eta"][i] for r in use) for i in range(len(KS))],
        "eta_repeats": [r["eta"] for r in use],
    }


# -- output -------------------------------------------------------------------------------------


def tables(doc: dict[str, Any]) -> str:
    """The figures as Markdown tables (the stages that ran)."""
    lines: list[str] = []
    if "batch_cost" in doc:
        lines += [
            "### Device cost of a batch (collate → predict → split, 1 thread, one core; "
            "samples not preempted)",
            "",
        ]
        lines.append(
            "| model | n | median ms | mean ms | p10 ms | p90 ms | cv | robust cv | per item ms "
            "| clean % | all: median ms |"
        )
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for name, m in doc["batch_cost"].items():
            for p in m["points"]:
                lines.append(
                    f"| {name} | {p['n']} | {p['median_ms']:.3f} | {p['mean_ms']:.3f} | "
                    f"{p['p10_ms']:.3f} | {p['p90_ms']:.3f} | {p['cv']:.2f} | "
                    f"{p['robust_cv']:.2f} | {p['per_item_ms']:.3f} | {100 * p['clean']:.0f}"
                    f"{' noisy' if p['noisy'] else ''} | {p['all_median_ms']:.3f} |"
                )
        lines.append("")
    if "prepost" in doc:
        lines += ["### Per-request CPU cost (ms: median / mean, robust cv; clean %)", ""]
        keys = [k for k in next(iter(doc["prepost"].values())) if k != "requests"]
        lines.append("| model | " + " | ".join(keys) + " |")
        lines.append("|---|" + "---:|" * len(keys))
        for name, m in doc["prepost"].items():
            cells = []
            for key in keys:
                st = m[key]
                cells.append(
                    f"{st['median_ms']:.3f} / {st['mean_ms']:.3f}, {st['robust_cv']:.2f}; "
                    f"{100 * st['clean']:.0f}{' noisy' if st['noisy'] else ''}"
                )
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    if "contention" in doc:
        c = doc["contention"]
        lines += [
            "### Contention: k runtimes on one core, throughput ÷ k = 1 "
            "(wall; per CPU second in brackets)",
            "",
        ]
        head = " | ".join(f"η({k})" for k in KS)
        lines.append(f"| model | n | clean repeats | items/s solo | {head} | 2 cores ÷ 1 |")
        lines.append("|---|---:|---:|---:|" + "---:|" * len(KS) + "---:|")

        def eta_cells(r: dict[str, Any]) -> str:
            pairs = zip(r["eta"], r["eta_cpu"], strict=True)
            etas = " | ".join(f"{e:.3f} ({x:.3f})" for e, x in pairs)
            two = f"{r['two_cores']:.2f} ({r['two_cores_cpu']:.2f})" if "two_cores" in r else "-"
            return f"{etas} | {two} |"

        for r in c["workloads"]:
            reps = f"{r['clean_repeats']}/{r['repeats']}" + (" noisy" if r["noisy"] else "")
            lines.append(
                f"| {r['model']} | {r['n']} | {reps} | {r['solo_items_per_s']:.0f} | "
                + eta_cells(r)
            )
        lines.append("| **median** | | | | " + eta_cells(c))
        if "mix" in c:
            mx = c["mix"]
            reps = f"{mx['clean_repeats']}/{mx['repeats']}" + (" noisy" if mx["noisy"] else "")
            etas = " | ".join(f"{e:.3f}" for e in mx["eta"])
            lines.append(f"| mix: {' + '.join(mx['models'])} | 1 | {reps} | | {etas} | |")
        lines.append("")
    lines += ["### Noise (% of the cores' time; 1/5/15-min load average at the end)", ""]
    lines.append("| stage | others' CPU % (all cores) | steal % | busy % per core | load |")
    lines.append("|---|---:|---:|---|---|")
    for stage, nz in doc["noise"].items():
        load = " / ".join(f"{x:.2f}" for x in nz["loadavg"])
        per = " / ".join(f"{x:g}" for x in nz["busy_pct_per_core"])
        lines.append(f"| {stage} | {nz['foreign_cpu_pct']} | {nz['steal_pct']} | {per} | {load} |")
    return "\n".join(lines)


def _ms(x: float) -> str:
    return f"{x:.3g}" if x < 1 else f"{x:.2f}".rstrip("0").rstrip(".")


def scenario_toml(doc: dict[str, Any]) -> str:
    """The measured figures as the ``eta`` line and the ``[[service]]`` cost lines of a
    ``lanes sim`` scenario: ``eta`` from the mix (different models overlapping, as under
    ``independent``), ``gpu`` the batch of one (median, robust cv), ``batch_ms`` the medians of
    larger batches, ``pre``/``post`` the per-request medians and robust cvs."""
    lines = []
    if "contention" in doc:
        c = doc["contention"]

        def fmt(etas: list[float]) -> str:
            return "[" + ", ".join(f"{e:.2f}" for e in [1.0, *etas[1:]]) + "]"

        if "mix" in c:
            lines.append(f"eta = {fmt(c['mix']['eta'])}  # different models overlapping (mix)")
            lines.append(f"# same model overlapping, median over workloads: {fmt(c['eta'])}")
        else:
            lines.append(f"eta = {fmt(c['eta'])}  # same model overlapping")
    for name in MODELS:
        lines.append(f"# {name}")
        if "batch_cost" in doc:
            m = doc["batch_cost"][name]
            one, *rest = m["points"]
            lines.append(
                f"gpu = {{ mean_ms = {_ms(one['median_ms'])}, cv = {one['robust_cv']:.2f} }}"
            )
            pts = ", ".join(f"[{p['n']}, {_ms(p['median_ms'])}]" for p in rest)
            lines.append(
                f"batching = {{ max_batch_size = {m['max_batch_size']}, "
                f"batch_timeout_micros = {m['batch_timeout_micros']}, "
                f"num_batch_threads = {m['num_batch_threads']}, batch_ms = [{pts}] }}"
            )
        if "prepost" in doc:
            for key in ("pre", "post"):
                st = doc["prepost"][name][key]
                lines.append(
                    f"{key} = {{ mean_ms = {_ms(st['median_ms'])}, cv = {st['robust_cv']:.2f} }}"
                )
    return "\n".join(lines)


def write_json(doc: dict[str, Any], out: Path) -> Path:
    path = out / DEFAULT_OUT.name if out.is_dir() or not out.suffix else out
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(path)
    return path


def _med(values: list[Any]) -> float:
    return float(statistics.median(values))


def _merge_stats(items: list[dict[str, Any]]) -> dict[str, Any]:
    """The median over runs of every number of one figure's stats, and the runs' range of
    ``median_ms``."""
    out: dict[str, Any] = {}
    for key, value in items[0].items():
        if key == "n":
            out[key] = value
        elif key == "samples":
            out[key] = sum(it[key] for it in items)
        elif isinstance(value, bool):
            out[key] = any(it[key] for it in items)
        elif isinstance(value, (int, float)):
            out[key] = _med([it[key] for it in items])
    out["runs"] = len(items)
    out["range_ms"] = [min(it["median_ms"] for it in items), max(it["median_ms"] for it in items)]
    return out


def _merge_eta(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One contention workload over runs: medians over the runs where it was clean (all runs,
    and ``noisy``, when it never was)."""
    use = [r for r in rows if not r["noisy"]] or rows
    out: dict[str, Any] = {k: rows[0][k] for k in ("n", "model", "models") if k in rows[0]}
    out["noisy"] = all(r["noisy"] for r in rows)
    out["repeats"] = sum(r["repeats"] for r in rows)
    out["clean_repeats"] = sum(r["clean_repeats"] for r in rows)
    out["runs_used"] = len(use)
    for key in ("eta", "eta_cpu"):
        if key in rows[0]:
            out[key] = [_med([r[key][i] for r in use]) for i in range(len(KS))]
    for key in ("solo_items_per_s", "two_cores", "two_cores_cpu"):
        if key in rows[0]:
            out[key] = _med([r[key] for r in use])
    return out


def merge(paths: list[Path]) -> dict[str, Any]:
    """Several runs' JSON as one: every figure the median over the runs that measured it (see
    :func:`_merge_stats`, :func:`_merge_eta`); ``noise`` keeps each run's."""
    runs = [json.loads(p.read_text()) for p in paths]
    doc: dict[str, Any] = {
        "merged": [str(p) for p in paths],
        "dates": [r["date"] for r in runs],
        "load_before": [r["load_before"] for r in runs],
        "machine": runs[0]["machine"],
        "noise": {
            f"{p.stem} {stage}": nz
            for p, r in zip(paths, runs, strict=True)
            for stage, nz in r["noise"].items()
        },
    }
    with_costs = [r for r in runs if "batch_cost" in r]
    if with_costs:
        doc["batch_cost"] = {}
        for name, m in with_costs[0]["batch_cost"].items():
            doc["batch_cost"][name] = {k: v for k, v in m.items() if k != "points"} | {
                "points": [
                    _merge_stats([r["batch_cost"][name]["points"][j] for r in with_costs])
                    for j in range(len(m["points"]))
                ]
            }
        doc["prepost"] = {
            name: {
                key: _merge_stats([r["prepost"][name][key] for r in with_costs])
                for key in m
                if key != "requests"
            }
            for name, m in with_costs[0]["prepost"].items()
        }
    with_eta = [r["contention"] for r in runs if "contention" in r]
    if with_eta:
        keys = [(w["model"], w["n"]) for w in with_eta[0]["workloads"]]
        workloads = [
            _merge_eta([w for c in with_eta for w in c["workloads"] if (w["model"], w["n"]) == key])
            for key in keys
        ]
        c: dict[str, Any] = {
            "workloads": workloads,
            "eta": [_med([w["eta"][i] for w in workloads]) for i in range(len(KS))],
            "eta_cpu": [_med([w["eta_cpu"][i] for w in workloads]) for i in range(len(KS))],
        }
        if all("two_cores" in w for w in workloads):
            c["two_cores"] = _med([w["two_cores"] for w in workloads])
            c["two_cores_cpu"] = _med([w["two_cores_cpu"] for w in workloads])
        mixes = [m["mix"] for m in with_eta if "mix" in m]
        if mixes:
            c["mix"] = _merge_eta(mixes)
        doc["contention"] = c
    doc["scenario_toml"] = scenario_toml(doc)
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="measure device costs, pre/post costs and contention of the demo zoo on "
        "this host's CPU devices (lanes serve --devices cpu:N --cpu-threads 1)"
    )
    ap.add_argument("--quick", action="store_true", help="about 30 s instead of about 3 min")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON file or folder")
    ap.add_argument("--seed", type=int, default=1, help="seed of the interleaving order")
    ap.add_argument(
        "--rounds", type=int, default=None, help="stages 1-2: rounds instead of the plan's"
    )
    ap.add_argument(
        "--native",
        type=Path,
        default=NATIVE,
        help="the native timer of stages 1-2 (default: the release build of lanes-server's "
        "example zoo_cost)",
    )
    ap.add_argument(
        "--wait-load",
        type=float,
        default=None,
        metavar="L",
        help="first wait until the 1-minute load average is below L",
    )
    ap.add_argument(
        "--wait-quiet",
        type=float,
        default=None,
        metavar="PCT",
        help="first wait until the cores were at most PCT %% busy over 5 s (others' work)",
    )
    ap.add_argument(
        "--wait-max",
        type=float,
        default=300.0,
        metavar="S",
        help="longest wait for --wait-load and --wait-quiet, seconds (default 300)",
    )
    ap.add_argument(
        "--stages",
        default=",".join(STAGES),
        help="comma-separated stages to run: costs (batch, pre and post costs), contention "
        "(default: both)",
    )
    ap.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        metavar="JSON",
        help="measure nothing: merge earlier runs' JSON (every figure the median over the runs "
        "that measured it cleanly), print the tables and write --out",
    )
    args = ap.parse_args(argv)
    if args.merge:
        merged = merge(args.merge)
        path = write_json(merged, args.out)
        print(tables(merged))
        print("\n### For a lanes sim scenario (medians over runs)\n")
        print(merged["scenario_toml"])
        print(f"\n# merged {len(args.merge)} runs; JSON: {path}")
        return 0
    stages = [x.strip() for x in args.stages.split(",") if x.strip()]
    if not stages or any(x not in STAGES for x in stages):
        ap.error(f"--stages {args.stages!r}: allowed are {', '.join(STAGES)}")
    plan = QUICK if args.quick else FULL
    if args.rounds is not None:
        plan = replace(plan, rounds=args.rounds)
    rng = random.Random(args.seed)
    cores = sorted(os.sched_getaffinity(0))
    waited = wait_until(args.wait_load, args.wait_quiet, args.wait_max)
    t_start = time.monotonic()
    doc: dict[str, Any] = {
        "command": " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv]),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(),
        "quick": args.quick,
        "plan": plan.__dict__,
        "stages": stages,
        "waited_s": waited,
        "load_before": loadavg(),
        "noise": {},
    }
    print(f"# load before: {doc['load_before']}", file=sys.stderr)
    models, device = serve_models()
    with tempfile.TemporaryDirectory(prefix="lanes-calibrate-") as tmp:
        requests = corpus(Path(tmp))
        replicas = {name: models[name].replica(device) for name in MODELS}
        items = {
            name: [replicas[name].preprocess(q.decoded.inputs) for q in requests[name]]
            for name in MODELS
        }
        os.sched_setaffinity(0, {cores[-1]})  # stages 1 and 2 on one core
        if "costs" in stages:
            noise = Noise([os.getpid()])
            doc["batch_cost"], doc["prepost"] = costs(
                models, requests, Path(tmp), plan.rounds, args.seed, args.native
            )
            doc["noise"]["costs"] = noise.done()
            print("# stages 1 and 2 (batch, pre and post costs) done", file=sys.stderr)
        if "contention" in stages:
            workloads = list(plan.eta_workloads)
            if not args.quick:
                workloads += [(name, sizes_of(replicas[name])[-1]) for name in MODELS]
            needed = workloads + [(m, 1) for m in sorted(set(MIX))]
            solo = solo_costs(replicas, items, needed, doc.get("batch_cost"))
            os.sched_setaffinity(0, set(cores))
            workers = Workers(max(KS), Path(tmp))
            try:
                noise = Noise([os.getpid(), *workers.pids])
                mix = contention_mix(workers, solo, plan, cores[0], rng)
                doc["contention"] = contention(workers, workloads, solo, plan, cores, rng)
                doc["contention"]["mix"] = mix
                doc["noise"]["contention"] = noise.done()
            finally:
                workers.close()
            print("# stage 3 (contention) done", file=sys.stderr)
    doc["load_after"] = loadavg()
    doc["seconds"] = round(time.monotonic() - t_start, 1)
    doc["scenario_toml"] = scenario_toml(doc)
    path = write_json(doc, args.out)
    print(tables(doc))
    print("\n### For a lanes sim scenario (medians; cv robust: 1.4826·MAD ÷ median)\n")
    print(doc["scenario_toml"])
    print(
        f"\n# {doc['seconds']} s; load before {doc['load_before']}, after "
        f"{doc['load_after']}; JSON: {path}"
    )
    return 0


def solo_costs(
    replicas: dict[str, Any],
    items: dict[str, list[Any]],
    workloads: list[tuple[str, int]],
    batch_cost: dict[str, Any] | None,
) -> dict[tuple[str, int], float]:
    """Each workload's solo batch time in ms, to size stage 3's runs: stage 1's median, or
    the median of 7 batches timed here when stage 1 did not run."""
    if batch_cost is not None:
        return {
            (name, p["n"]): p["median_ms"] for name, m in batch_cost.items() for p in m["points"]
        }
    out = {}
    for name, n in workloads:
        batch = (items[name] * 32)[:n]
        device_work(replicas[name], batch)
        times = []
        for _ in range(7):
            t0 = time.perf_counter_ns()
            device_work(replicas[name], batch)
            times.append((time.perf_counter_ns() - t0) / 1e6)
        out[(name, n)] = statistics.median(times)
    return out


if __name__ == "__main__":
    sys.exit(main())
