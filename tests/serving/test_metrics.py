"""Prometheus metrics of ``lanes serve`` (docs/metrics.md), scraped over loopback from real
servers started in-process: after known traffic one scrape shows exactly the expected counts and
exactly the documented label sets; device accounts agree with the statistics' execution counts;
a scrape loop during load does not break serving.

Requests are held on the device by a gate (a ``threading.Event`` in ``predict``), so queueing,
429, 504 and a client that goes away are produced deterministically; every wait polls a
condition with a deadline.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import numpy as np
import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from lanes.errors import LanesError
from lanes.models import Batching, Cost, Model, TensorSpec
from lanes.serving import Handle, ServeConfig, start_in_thread

X = [TensorSpec("x", "FP32", (-1, 1))]
Y = [TensorSpec("y", "FP32", (-1, 1))]
OUTCOMES = {
    "success",
    "rejected_queue_full",
    "deadline_exceeded",
    "cancelled",
    "bad_request",
    "model_error",
    "unavailable",
}
LABELS = {  # family → label names of its samples (docs/metrics.md)
    "lanes_requests": {"model", "outcome"},
    "lanes_request_duration_seconds": {"model"},
    "lanes_queue_duration_seconds": {"model"},
    "lanes_preprocess_duration_seconds": {"model"},
    "lanes_device_duration_seconds": {"model"},
    "lanes_postprocess_duration_seconds": {"model"},
    "lanes_batch_size": {"model"},
    "lanes_queue_depth": {"model"},
    "lanes_cost_estimate_seconds": {"model", "batch_size"},
    "lanes_device_busy_seconds": {"device"},
    "lanes_device_jobs": {"device"},
    "lanes_device_idle_while_waiting_seconds": {"device"},
    "lanes_device_overlap_seconds": {"device"},
    "lanes_host_cpu_seconds": {"cpu", "mode"},
    "lanes_info": {"version", "policy"},
}


@dataclass(eq=False)
class Gated(Model):
    """``y = x``; ``predict`` waits at ``gate`` (open by default) and raises on a negative x."""

    gate: threading.Event = field(default_factory=threading.Event)
    entered: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.gate.set()

    def predict(self, batch: Any) -> dict[str, np.ndarray]:
        self.entered.set()
        assert self.gate.wait(timeout=30)
        if (batch["x"] < 0).any():
            raise ValueError("negative input")
        return {"y": np.asarray(batch["x"])}


def model(name: str, max_batch: int = 1, queued: int = 1, ms: float = 1.0) -> Gated:
    return Gated(
        name=name,
        inputs=X,
        outputs=Y,
        batching=Batching(max_batch_size=max_batch, max_enqueued_batches=queued),
        cost=Cost(fixed_ms=ms),
    )


def body(value: float = 1.0, rows: int = 1) -> bytes:
    data = [value] * rows
    return json.dumps(
        {"inputs": [{"name": "x", "shape": [rows, 1], "datatype": "FP32", "data": data}]}
    ).encode()


def start(models: list[Model], **config: Any) -> Handle:
    settings = {"port": 0, "metrics_port": 0, "devices": "sim:1", "warmup_batches": 0, **config}
    return start_in_thread(ServeConfig(**settings), models)


def model_stats(handle: Handle, name: str) -> dict[str, Any]:
    """The model's entry of ``GET /v2/models/{name}/stats``."""
    with urllib.request.urlopen(f"{handle.url}/v2/models/{name}/stats", timeout=10) as r:
        return dict(json.loads(r.read())["model_stats"][0])


def scrape(handle: Handle) -> dict[str, Any]:
    """Family name → family, from one GET /metrics."""
    port = handle.server.metrics_port
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


def value(families: dict[str, Any], sample: str, **labels: str) -> float:
    family = sample
    for suffix in ("_total", "_count", "_sum", "_bucket"):
        if sample.endswith(suffix) and sample.removesuffix(suffix) in families:
            family = sample.removesuffix(suffix)
    found = [
        s.value
        for s in families[family].samples
        if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(found) == 1, (sample, labels, found)
    return float(found[0])


def poll(condition: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.005)


async def post(session: aiohttp.ClientSession, url: str, data: bytes, **headers: str) -> int:
    async with session.post(url, data=data, headers=headers) as r:
        await r.read()
        return r.status


async def known_traffic(h: Handle, gate: Gated, successes: int) -> None:
    """One of each outcome on ``gate`` (held at its gate), then ``successes`` more, then a 400
    and a 500; and 3 requests of 1 row to ``pair``."""
    url = f"{h.url}/v2/models/gate/infer"
    async with aiohttp.ClientSession() as session:
        gate.gate.clear()
        held = asyncio.ensure_future(post(session, url, body()))
        await asyncio.to_thread(poll, gate.entered.is_set, "the first batch on the device")
        # Queued behind it: one request with a 150 ms deadline, filling the 1-row queue.
        late = asyncio.ensure_future(post(session, url, body(), **{"lanes-timeout-ms": "150"}))
        await asyncio.to_thread(poll, lambda: h.server.queued_rows("gate") == 1, "a queued request")
        assert await post(session, url, body()) == 429
        assert await late == 504
        # A client that goes away while its request is queued.
        gone = asyncio.ensure_future(post(session, url, body()))
        await asyncio.to_thread(poll, lambda: h.server.queued_rows("gate") == 1, "a queued request")
        gone.cancel()
        await asyncio.to_thread(
            poll, lambda: model_stats(h, "gate")["lanes"]["cancelled"] == 1, "the cancellation"
        )
        gate.gate.set()
        assert await held == 200
        for _ in range(successes):
            assert await post(session, url, body()) == 200
        assert await post(session, url, b'{"inputs": []}') == 400
        assert await post(session, url, body(-1.0)) == 500
        for _ in range(3):
            assert await post(session, f"{h.url}/v2/models/pair/infer", body()) == 200


@pytest.mark.parametrize("policy", ["fifo", "sjf"])
def test_a_scrape_after_known_traffic_shows_exactly_its_counts(policy: str) -> None:
    gate = model("gate")
    pair = model("pair", max_batch=4, queued=8, ms=1.0)
    successes = 5
    with start([gate, pair], policy=policy) as h:
        asyncio.run(known_traffic(h, gate, successes))
        families = scrape(h)
        executions = sum(model_stats(h, m)["execution_count"] for m in ("gate", "pair"))
        stats = model_stats(h, "gate")

    expected = {
        "success": successes + 1,
        "rejected_queue_full": 1,
        "deadline_exceeded": 1,
        "cancelled": 1,
        "bad_request": 1,
        "model_error": 1,
        "unavailable": 0,
    }
    for outcome, n in expected.items():
        assert value(families, "lanes_requests_total", model="gate", outcome=outcome) == n
    # The statistics route counts the same.
    assert stats["inference_stats"]["success"]["count"] == expected["success"]
    assert stats["lanes"] == {"rejected": 1, "expired": 1, "cancelled": 1}
    assert value(families, "lanes_requests_total", model="pair", outcome="success") == 3
    # Every documented family, with exactly its label set (``_created`` samples included).
    assert set(LABELS) <= set(families)
    for name, labels in LABELS.items():
        for sample in families[name].samples:
            assert set(sample.labels) - {"le"} == labels, (name, sample)
    assert {s.labels["outcome"] for s in families["lanes_requests"].samples} == OUTCOMES
    assert {s.labels["mode"] for s in families["lanes_host_cpu_seconds"].samples} == {
        "user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"
    }  # fmt: skip
    assert value(families, "process_cpu_seconds_total") > 0
    assert value(families, "lanes_info", policy=policy) == 1
    # Histograms: one observation per request that reached that stage.
    ran = successes + 1  # gate's requests that ran and succeeded (one batch each)
    assert value(families, "lanes_request_duration_seconds_count", model="gate") == ran
    assert value(families, "lanes_queue_duration_seconds_count", model="gate") == ran
    assert value(families, "lanes_device_duration_seconds_count", model="gate") == ran
    assert value(families, "lanes_postprocess_duration_seconds_count", model="gate") == ran
    # pre-processed: the successes, the 504, the cancelled one and the 500 (not the 429/400)
    assert value(families, "lanes_preprocess_duration_seconds_count", model="gate") == ran + 3
    assert value(families, "lanes_batch_size_sum", model="pair") == 3
    assert value(families, "lanes_batch_size_bucket", model="pair", le="1.0") == 3
    assert {s.labels["le"] for s in families["lanes_batch_size"].samples if "le" in s.labels} == {
        "1.0", "2.0", "4.0", "+Inf"
    }  # fmt: skip
    assert value(families, "lanes_queue_depth", model="gate") == 0
    sizes = {
        s.labels["batch_size"]
        for s in families["lanes_cost_estimate_seconds"].samples
        if s.labels["model"] == "pair"
    }
    assert sizes == {"1", "2", "4"}
    assert value(families, "lanes_cost_estimate_seconds", model="pair", batch_size="1") > 0
    # Devices: jobs are the statistics' executions and the failed batch; never idle
    # while work waited; one job at a time.
    # (the statistics' execution_count counts the batches that succeeded).
    assert value(families, "lanes_device_jobs_total", device="sim:0") == executions + 1 == ran + 4
    assert value(families, "lanes_device_busy_seconds_total", device="sim:0") > 0
    assert value(families, "lanes_device_idle_while_waiting_seconds_total", device="sim:0") == 0
    assert value(families, "lanes_device_overlap_seconds_total", device="sim:0") == 0


async def two_slow(url: str, each: int) -> None:
    async with aiohttp.ClientSession() as session:
        codes = await asyncio.gather(
            *(post(session, f"{url}/v2/models/{m}/infer", body()) for m in ("a", "b")
              for _ in range(each))
        )  # fmt: skip
    assert set(codes) == {200}


@pytest.mark.parametrize(("policy", "overlaps"), [("independent", True), ("fifo", False)])
def test_overlap_is_counted_under_independent_only(policy: str, overlaps: bool) -> None:
    models: list[Model] = [model("a", queued=8, ms=40.0), model("b", queued=8, ms=40.0)]
    with start(models, policy=policy) as h:
        asyncio.run(two_slow(h.url, 2))
        families = scrape(h)
    overlap = value(families, "lanes_device_overlap_seconds_total", device="sim:0")
    busy = value(families, "lanes_device_busy_seconds_total", device="sim:0")
    assert value(families, "lanes_device_jobs_total", device="sim:0") == 4
    assert value(families, "lanes_device_idle_while_waiting_seconds_total", device="sim:0") == 0
    if overlaps:
        assert overlap > 0.02  # two 40 ms batches started together share the device
    else:
        assert overlap == 0
        assert busy >= 4 * 0.04 * 0.9  # four 40 ms batches, one after another


def test_scraping_during_load_does_not_break_serving() -> None:
    with start([model("m", max_batch=8, queued=64, ms=0.5)], policy="sjf", devices="sim:2") as h:
        stop = threading.Event()
        scrapes: list[int] = []

        def scraper() -> None:
            while not stop.is_set():
                families = scrape(h)
                assert "lanes_requests" in families
                scrapes.append(1)

        async def load() -> list[int]:
            async with aiohttp.ClientSession() as session:
                url = f"{h.url}/v2/models/m/infer"
                sem = asyncio.Semaphore(8)

                async def one() -> int:
                    async with sem:
                        return await post(session, url, body())

                return await asyncio.gather(*(one() for _ in range(300)))

        with ThreadPoolExecutor(1) as pool:
            scraping = pool.submit(scraper)
            codes = asyncio.run(load())
            stop.set()
            scraping.result(timeout=30)
        families = scrape(h)
    assert codes == [200] * 300
    assert len(scrapes) >= 1
    assert value(families, "lanes_requests_total", model="m", outcome="success") == 300


def test_metrics_off_and_a_busy_port() -> None:
    with start([model("m")], metrics_port=None) as h:
        assert h.server.metrics_port is None
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(LanesError) as err:
            start([model("m")], metrics_port=port)
    assert f"cannot serve metrics on 127.0.0.1:{port}" in err.value.message
    assert "--metrics-port" in err.value.message
