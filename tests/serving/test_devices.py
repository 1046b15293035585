"""Resolving ``--devices`` (:mod:`lanes.serving.devices`): ``auto`` on a host without CUDA is one
single-threaded CPU executor per core (GPU-like), except under ``independent``, which keeps the
status quo; ``gpu-like`` is that under every policy; an explicit ``--cpu-threads`` wins; named
devices are unchanged; and the server says at start what ``auto`` became.

CUDA devices and cores are injected, so every row runs the same on any host.
"""

from __future__ import annotations

import logging
import os

import pytest

from lanes.errors import LanesError
from lanes.models import Model, TensorSpec
from lanes.serving import ServeConfig
from lanes.serving import devices as devices_module
from lanes.serving.devices import resolve_devices
from lanes.serving.server import Server

CORES = os.cpu_count() or 1
GPU_LIKE = "intra-op thread each — GPU-like: overlapping work waits"


@pytest.mark.parametrize(
    ("text", "threads", "independent", "cuda", "cores", "names", "per", "note"),
    [
        # auto without CUDA: one executor per usable core, one intra-op thread each
        ("auto", None, False, 0, 4, [f"cpu:{i}" for i in range(4)], 1,
         f"devices auto: no CUDA GPU; 4 CPU executors (one per core), 1 {GPU_LIKE}"),
        ("auto", None, False, 0, 1, ["cpu:0"], 1,
         f"devices auto: no CUDA GPU; 1 CPU executor (one per core), 1 {GPU_LIKE}"),
        ("auto", None, False, 0, 100, [f"cpu:{i}" for i in range(64)], 1,
         "devices auto: no CUDA GPU; 64 CPU executors (one per core of 100, at most 64), "
         f"1 {GPU_LIKE}"),
        # an explicit --cpu-threads wins
        ("auto", 3, False, 0, 2, ["cpu:0", "cpu:1"], 3,
         "devices auto: no CUDA GPU; 2 CPU executors (one per core), 3 intra-op threads each "
         "(--cpu-threads) — GPU-like: overlapping work waits"),
        # independent keeps the status quo: one executor, the cores as intra-op threads
        ("auto", None, True, 0, 4, ["cpu:0"], CORES,
         f"devices auto: no CUDA GPU; policy independent: one CPU executor with {CORES} "
         f"intra-op thread{'' if CORES == 1 else 's'}, each model its own workers"),
        ("auto", 2, True, 0, 4, ["cpu:0"], 2,
         "devices auto: no CUDA GPU; policy independent: one CPU executor with 2 intra-op "
         "threads, each model its own workers"),
        # gpu-like is auto without the status-quo exception: per core under independent too
        ("gpu-like", None, True, 0, 4, [f"cpu:{i}" for i in range(4)], 1,
         f"devices gpu-like: no CUDA GPU; 4 CPU executors (one per core), 1 {GPU_LIKE}"),
        (" gpu-like ", None, False, 0, 2, ["cpu:0", "cpu:1"], 1,
         f"devices gpu-like: no CUDA GPU; 2 CPU executors (one per core), 1 {GPU_LIKE}"),
        ("gpu-like", 2, True, 0, 2, ["cpu:0", "cpu:1"], 2,
         "devices gpu-like: no CUDA GPU; 2 CPU executors (one per core), 2 intra-op threads "
         "each (--cpu-threads) — GPU-like: overlapping work waits"),
        ("gpu-like", None, True, 2, 4, ["cuda:0", "cuda:1"], 1,
         "devices gpu-like: 2 CUDA GPUs (cuda:0, cuda:1)"),
        # with CUDA, auto is every CUDA device, whatever the policy
        ("auto", None, False, 2, 4, ["cuda:0", "cuda:1"], 1,
         "devices auto: 2 CUDA GPUs (cuda:0, cuda:1)"),
        ("auto", None, True, 1, 4, ["cuda:0"], 1, "devices auto: 1 CUDA GPU (cuda:0)"),
        # named devices are unchanged and need no note
        ("cpu:2", None, False, 0, 4, ["cpu:0", "cpu:1"], max(1, CORES // 2), None),
        ("cpu", None, False, 0, 4, ["cpu:0"], CORES, None),
        ("cpu", 1, False, 0, 4, ["cpu:0"], 1, None),
        (" sim:3 ", None, False, 0, 4, ["sim:0", "sim:1", "sim:2"], 1, None),
        ("cuda:1", None, False, 2, 4, ["cuda:1"], 1, None),
    ],
)  # fmt: skip
def test_resolution(text, threads, independent, cuda, cores, names, per, note):
    got = resolve_devices(
        text,
        threads=threads,
        independent=independent,
        cuda_available=lambda: cuda,
        cores=lambda: cores,
    )
    assert [d.name for d in got.devices] == names
    assert {d.threads for d in got.devices} == {per}
    assert got.note == note


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("gpu-like:2", "'gpu-like' stands alone (no count, no list)"),
        ("auto:2", "'auto' stands alone (no count, no list)"),
        ("gpu-like,gpu-like", "'gpu-like' stands alone (no count, no list)"),
        ("gpu", "unknown kind 'gpu'"),
        ("GPU-LIKE", "unknown kind 'GPU-LIKE'"),
    ],
)
def test_near_misses_of_the_automatic_forms_are_refused(text, why):
    with pytest.raises(LanesError) as info:
        resolve_devices(text, cuda_available=lambda: 0)
    assert info.value.code == "bad_devices"
    assert info.value.message.startswith(f"--devices '{text}': {why}")
    assert "auto, gpu-like, cpu" in info.value.message


def test_usable_cores_is_the_process_affinity():
    assert devices_module.usable_cores() == len(os.sched_getaffinity(0))


class Echo(Model):
    def predict(self, batch):
        return {"y": batch["x"]}


@pytest.mark.parametrize(
    ("policy", "arbiter", "names", "note", "spec"),
    [
        ("sjf", None, ["cpu:0", "cpu:1", "cpu:2"],
         f"devices auto: no CUDA GPU; 3 CPU executors (one per core), 1 {GPU_LIKE}", "auto"),
        # under an arbiter the daemon schedules: GPU-like devices whatever the local policy
        ("independent", "unix:/nonexistent/lanes.sock", ["cpu:0", "cpu:1", "cpu:2"],
         f"devices auto: no CUDA GPU; 3 CPU executors (one per core), 1 {GPU_LIKE}", "auto"),
        ("independent", None, ["cpu:0"],
         f"devices auto: no CUDA GPU; policy independent: one CPU executor with {CORES} "
         f"intra-op thread{'' if CORES == 1 else 's'}, each model its own workers", "auto"),
        # gpu-like: each model its own single-threaded worker on every core
        ("independent", None, ["cpu:0", "cpu:1", "cpu:2"],
         f"devices gpu-like: no CUDA GPU; 3 CPU executors (one per core), 1 {GPU_LIKE}",
         "gpu-like"),
    ],
)  # fmt: skip
def test_the_server_says_at_start_what_auto_became(
    monkeypatch, caplog, policy, arbiter, names, note, spec
):
    monkeypatch.setattr(devices_module, "cuda_count", lambda: 0)
    monkeypatch.setattr(devices_module, "usable_cores", lambda: 3)
    caplog.set_level(logging.INFO, logger="lanes.serve")
    config = ServeConfig(devices=spec, policy=policy, arbiter=arbiter, port=0, metrics_port=None)
    spec = [TensorSpec("x", "FP32", (-1, 1))]
    server = Server(config, [Echo(name="echo", inputs=spec, outputs=spec)])
    try:
        assert [d.name for d in server.devices] == names
        assert [r.getMessage() for r in caplog.records if r.name == "lanes.serve"] == [note]
    finally:
        server.stop()


def test_the_cuda_counter_follows_the_zoo_backend():
    assert devices_module.cuda_counter("torch") is devices_module.torch_cuda_count
    assert devices_module.cuda_counter("onnx") is devices_module.cuda_count


def test_torch_cuda_is_not_asked_without_an_nvidia_gpu(monkeypatch):
    monkeypatch.setattr(devices_module, "gpu_count", lambda: 0)
    assert devices_module.torch_cuda_count() == 0


def test_a_missing_gpu_names_the_runtime_that_looked(monkeypatch):
    monkeypatch.setattr(devices_module, "gpu_count", lambda: 0)
    with pytest.raises(LanesError) as info:
        devices_module.parse_devices("cuda:0", cuda_available=devices_module.cuda_counter("torch"))
    assert info.value.code == "bad_devices"
    assert "cuda:0 is not present (this host has 0 CUDA device(s) usable by PyTorch)" in (
        info.value.message
    )
