"""``--policy auto`` (the default): chosen by the devices' kind (lanes.serving.default_policy).

The rule on its own, then a real server on loopback: the policy it runs, what it says at start
and in ``GET /v2``, and that on GPU-like CPU devices a model really has one batch in flight per
device (a Python model counting the ``predict`` calls that overlap), where an explicit ``sjf``
keeps the model's own one.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pytest

from lanes._core import Scheduler
from lanes.errors import LanesError
from lanes.models import Batching, Cost, Model, TensorSpec
from lanes.models.base import Device
from lanes.serving import ServeConfig, start_in_thread
from lanes.serving.config import resolve
from lanes.serving.default_policy import (
    AUTO,
    CPU_POLICY,
    GPU_POLICY,
    gpu_like_cpu,
    resolve_policy,
)

BODY = json.dumps(
    {"inputs": [{"name": "x", "shape": [1, 1], "datatype": "FP32", "data": [0.0]}]}
).encode()


def cpu(n: int, threads: int = 1) -> list[Device]:
    return [Device("cpu", i, threads) for i in range(n)]


# -- the rule ---------------------------------------------------------------------------------


def test_gpu_like_cpu_devices_get_the_fair_wide_lane_and_a_batch_per_device() -> None:
    chosen = resolve_policy(AUTO, cpu(2))
    assert chosen.policy == CPU_POLICY == "fair:fast=25,hold=6,burst=100,width=2,beside=any"
    assert chosen.batch_threads == 2
    assert (chosen.num_batch_threads(1), chosen.num_batch_threads(4)) == (2, 4)
    assert chosen.note == (
        f"policy auto: GPU-like CPU devices, so {CPU_POLICY} with up to 2 batches of each model "
        "in flight (one per device)"
    )
    assert resolve_policy(AUTO, cpu(16)).batch_threads == 16


@pytest.mark.parametrize(
    ("devices", "why"),
    [
        ([Device("cuda", 0, 1), Device("cuda", 1, 1)], "GPUs"),
        ([Device("sim", 0, 1)], "simulated GPUs"),
        (cpu(1, threads=2), "CPU executors with several intra-op threads (not GPU-like)"),
        (cpu(2, threads=4), "CPU executors with several intra-op threads (not GPU-like)"),
    ],
)
def test_every_other_device_gets_sjf_with_each_models_own_threads(
    devices: list[Device], why: str
) -> None:
    chosen = resolve_policy(AUTO, devices)
    assert (chosen.policy, chosen.batch_threads) == (GPU_POLICY, 1)
    assert chosen.num_batch_threads(3) == 3
    assert chosen.note == f"policy auto: {why}, so sjf"


def test_under_an_arbiter_auto_keeps_sjf() -> None:
    chosen = resolve_policy(AUTO, cpu(2), arbitrated=True)
    assert (chosen.policy, chosen.batch_threads) == (GPU_POLICY, 1)
    assert chosen.note == "policy auto: the arbiter orders the batches, so sjf here"
    assert resolve_policy("fifo", cpu(2), arbitrated=True).policy == "fifo"


@pytest.mark.parametrize("policy", ["sjf", "fifo", "independent", CPU_POLICY])
def test_a_named_policy_is_used_as_given(policy: str) -> None:
    chosen = resolve_policy(policy, cpu(2))
    assert (chosen.policy, chosen.batch_threads, chosen.note) == (policy, 1, None)


def test_gpu_like_means_every_device_one_threaded_cpu() -> None:
    assert gpu_like_cpu(cpu(3))
    assert not gpu_like_cpu([])
    assert not gpu_like_cpu([*cpu(1), Device("cpu", 1, 2)])


def test_the_cpu_policy_is_one_the_engine_takes_with_two_fast_slots() -> None:
    scheduler = Scheduler(CPU_POLICY, [1, 1])
    assert scheduler.policy.startswith("fair")


def test_auto_is_the_default_and_a_bad_policy_still_names_auto() -> None:
    assert ServeConfig().policy == AUTO
    assert resolve({}, env={}).policy == AUTO
    assert resolve({"policy": "auto"}, env={}).policy == AUTO
    with pytest.raises(LanesError) as info:
        resolve({"policy": "shortest"}, env={})
    assert info.value.message.startswith("--policy = 'shortest': ")
    assert "(serve allows auto, independent, fifo" in info.value.message


# -- a real server ----------------------------------------------------------------------------


@dataclass
class Tally:
    """``predict`` calls running now and the most that overlapped, shared by the replicas (each
    device's replica is a shallow copy of the model)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    now: int = 0
    most: int = 0


@dataclass
class Overlap(Model):
    """Sleeps in ``predict``, counting the calls that overlap."""

    tally: Tally = field(default_factory=Tally)

    def predict(self, batch):
        with self.tally.lock:
            self.tally.now += 1
            self.tally.most = max(self.tally.most, self.tally.now)
        time.sleep(0.06)
        with self.tally.lock:
            self.tally.now -= 1
        return {"y": np.asarray(batch["x"])}


def overlap_model() -> Overlap:
    spec = [TensorSpec("x", "FP32", (-1, 1))]
    return Overlap(
        name="slow",
        inputs=spec,
        outputs=[TensorSpec("y", "FP32", (-1, 1))],
        # batching off: every request is a batch; 60 ms estimated, so a long job under `fair`
        batching=Batching(max_batch_size=0, max_enqueued_batches=64),
        cost=Cost(fixed_ms=60),
    )


def post(url: str) -> int:
    req = urllib.request.Request(f"{url}/v2/models/slow/infer", data=BODY, method="POST")
    with urllib.request.urlopen(req, timeout=30) as r:
        return int(r.status)


@pytest.mark.parametrize(
    ("policy", "runs", "in_flight"),
    [(AUTO, CPU_POLICY, 2), ("sjf", "sjf", 1)],
)
def test_the_server_runs_what_auto_chose_with_a_batch_per_device(
    caplog: pytest.LogCaptureFixture, policy: str, runs: str, in_flight: int
) -> None:
    caplog.set_level(logging.INFO, logger="lanes.serve")
    model = overlap_model()
    config = ServeConfig(
        port=0, metrics_port=None, grpc_port="off", devices="cpu:2", cpu_threads=1,
        policy=policy, warmup_batches=0,
    )  # fmt: skip
    with start_in_thread(config, [model]) as h:
        assert h.server.policy == runs
        assert h.server.batch_threads == [in_flight]
        with urllib.request.urlopen(f"{h.url}/v2", timeout=10) as r:
            assert json.load(r)["policy"] == runs
        with ThreadPoolExecutor(8) as pool:
            assert list(pool.map(post, [h.url] * 8)) == [200] * 8
    assert model.tally.most == in_flight
    notes = [r.getMessage() for r in caplog.records if r.getMessage().startswith("policy auto")]
    assert notes == ([resolve_policy(AUTO, cpu(2)).note] if policy == AUTO else [])


def test_simulated_gpus_keep_sjf_and_the_models_own_threads() -> None:
    config = ServeConfig(port=0, metrics_port=None, grpc_port="off", devices="sim:2",
                         warmup_batches=0)  # fmt: skip
    with start_in_thread(config, [overlap_model()]) as h:
        assert (h.server.policy, h.server.batch_threads) == ("sjf", [1])
