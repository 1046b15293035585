"""``lanes serve``'s phases, for real: loading → warming → ready → draining → stopped.

Readiness gates on warm-up (an in-process server on loopback whose python-adapter model blocks
its warm-up batches until the test opens a gate file); a warm-up failure fails start-up naming
model and device; and the drain on signals, with ``lanes serve`` as a subprocess on simulated
GPUs: in-flight requests finish, a request on an open keep-alive connection answers 503, new
connections are refused once the listener closes, leftovers at the drain timeout answer 503, the
process exits 0, and a second signal exits at once with 128 + the signal number.
"""

from __future__ import annotations

import http.client
import json
import signal
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from lanes.errors import LanesError
from lanes.models import Batching, Model, TensorSpec
from lanes.models.base import NO_SAMPLE
from lanes.models.repository import load_repository
from lanes.serving import ServeConfig, start_in_thread
from lanes.serving.warmup import WARMUP_FAILED, batch_sizes
from serve_process import ServeProcess, model_toml, start, stop, write_model

REQUEST = json.dumps(
    {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]}]}
).encode()
GATED_PY = """\
import os
import threading
import time

RECORD = {record!r}
GATE = {gate!r}


def thread():
    with open(f"/proc/self/task/{{threading.get_native_id()}}/comm") as f:
        return f.read().strip()  # the OS thread's name, cut to 15 characters


def load(device):
    def predict(batch):
        while not os.path.exists(GATE):  # slow until the test opens the gate
            time.sleep(0.002)
        with open(RECORD, "a") as f:
            f.write(f"{{device.name}} {{len(batch['x'])}} {{time.monotonic()}} {{thread()}}\\n")
        return {{"y": batch["x"] * 2}}

    return predict
"""
SIM_PY = """\
def predict(batch):
    return {"y": batch["x"] * 2}
"""


def repository(root: Path, name: str, source: str, max_batch: int, cost_ms: float = 1.0) -> Path:
    return write_model(root / "repo", name, source, model_toml(max_batch, cost_ms=cost_ms))


def status(url: str, data: bytes | None = None) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def wait_until(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "condition not met in time"
        time.sleep(0.01)


# -- warm-up --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("max_batch", "sizes"),
    [(0, [1]), (1, [1]), (2, [1, 2]), (5, [1, 2, 4, 5]), (8, [1, 2, 4, 8]), (16, [1, 2, 4, 8, 16])],
)
def test_batch_sizes_are_one_the_powers_of_two_and_the_max(max_batch: int, sizes: list[int]):
    assert batch_sizes(max_batch) == sizes


def test_the_default_sample_is_zeros_of_the_inputs_and_bytes_needs_an_override():
    m = Model(
        name="m",
        inputs=[TensorSpec("a", "FP32", (-1, 3, -1)), TensorSpec("b", "INT64", (-1,))],
        outputs=[TensorSpec("y", "FP32", (-1,))],
        batching=Batching(max_batch_size=4),
    )
    item = m.sample()
    assert item["a"].shape == (1, 3, 1) and item["a"].dtype == np.float32 and not item["a"].any()
    assert item["b"].shape == (1,) and item["b"].dtype == np.int64
    text = Model(
        name="t", inputs=[TensorSpec("s", "BYTES", (-1,))], outputs=[TensorSpec("y", "FP32", (-1,))]
    )
    with pytest.raises(LanesError, match=r"input 's' is BYTES.*override Model\.sample") as err:
        text.sample()
    assert err.value.code == NO_SAMPLE


def test_readiness_gates_on_warm_up_on_every_device_at_every_size(tmp_path: Path):
    record, gate = tmp_path / "record.txt", tmp_path / "gate"
    source = GATED_PY.format(record=str(record), gate=str(gate))
    models = load_repository(repository(tmp_path, "gated", source, max_batch=4))
    # sjf: one executor thread per device (auto on GPU-like cpu:2 adds two fast slots, each warmed)
    config = ServeConfig(port=0, devices="cpu:2", policy="sjf", metrics_port=None, warmup_batches=2)
    handle = start_in_thread(config, models, wait_ready=False)
    try:
        url = handle.url
        wait_until(lambda: handle.server.state == "warming")
        assert status(f"{url}/v2/health/live")[0] == 200
        code, body = status(f"{url}/v2/health/ready")
        assert (code, body) == (503, {"error": "not ready: warming"})
        code, body = status(f"{url}/v2/models/gated/ready")
        assert (code, body) == (503, {"error": "model 'gated' not ready: warming"})
        code, body = status(f"{url}/v2/models/gated/infer", REQUEST)
        assert (code, body) == (503, {"error": "not ready: warming"})
        assert not record.exists()  # warm-up is held at the gate: not ready meanwhile

        gate.touch()
        wait_until(lambda: status(f"{url}/v2/health/ready")[0] == 200)
        ready_at = time.monotonic()
        runs = [line.split() for line in record.read_text().splitlines()]
        # 2 batches at each of the sizes 1, 2, 4 on each device, all before ready was seen.
        for device in ("cpu:0", "cpu:1"):
            assert [int(n) for d, n, _, _ in runs if d == device] == [1, 1, 2, 2, 4, 4]
            # On the device's executor thread, where its requests' batches will run.
            executor = f"lanes-device-{device[-1]}."
            assert {t for d, _, _, t in runs if d == device} == {executor}
        assert len(runs) == 12
        assert all(float(t) < ready_at for _, _, t, _ in runs)
        stats = status(f"{url}/v2/models/gated/stats")[1]["model_stats"][0]
        assert stats["execution_count"] == 0  # warm-up is not counted as serving
        assert [w.device for w in sorted(handle.server.warmed, key=lambda w: w.device)] == [
            "cpu:0",
            "cpu:1",
        ]

        code, body = status(f"{url}/v2/models/gated/infer", REQUEST)
        assert code == 200 and body["outputs"][0]["data"] == [2, 4]
        assert len(record.read_text().splitlines()) == 13
        assert status(f"{url}/v2/models/gated/stats")[1]["model_stats"][0]["execution_count"] == 1
    finally:
        gate.touch()
        handle.stop()


def test_a_model_whose_warm_up_raises_fails_start_up_naming_model_and_device():
    class Broken(Model):
        def predict(self, batch: Any) -> Any:
            if len(batch["x"]) > 1:
                raise ValueError("no batches of two here")
            return {"y": batch["x"]}

    model = Broken(
        name="broken",
        inputs=[TensorSpec("x", "FP32", (-1, 2))],
        outputs=[TensorSpec("y", "FP32", (-1, 2))],
        batching=Batching(max_batch_size=2),
    )
    config = ServeConfig(port=0, devices="sim:1", metrics_port=None)
    with pytest.raises(LanesError) as err:
        start_in_thread(config, [model])
    assert err.value.code == WARMUP_FAILED
    assert err.value.message == (
        "model 'broken' failed warm-up on sim:0 (batch of 2): ValueError: no batches of two here"
    )


# -- drain ----------------------------------------------------------------------------------------


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Callable[..., ServeProcess]]:
    """``launch(cost_ms, devices, drain_timeout)``: ``lanes serve`` on a repository holding
    ``slow`` (a ``cost_ms`` batch of one on simulated GPUs), as a subprocess."""
    procs: list[ServeProcess] = []

    def launched(cost_ms: float, devices: str, drain_timeout: float) -> ServeProcess:
        repo = repository(tmp_path, "slow", SIM_PY, max_batch=1, cost_ms=cost_ms)
        args = ["--models", str(repo), "--devices", devices, "--port", "0"]
        args += ["--metrics-port", "off", "--policy", "fifo", "--drain-timeout", str(drain_timeout)]
        procs.append(start(args, tmp_path / "serve.log"))
        return procs[-1]

    yield launched
    for p in procs:
        stop(p.proc)


def send(pool: ThreadPoolExecutor, p: ServeProcess, n: int) -> list[Future[tuple[int, Any]]]:
    return [pool.submit(status, f"{p.url}/v2/models/slow/infer", REQUEST) for _ in range(n)]


def queued_or_running(p: ServeProcess) -> int:
    """Requests past pre-processing (queued or on a device), from the model's statistics."""
    stats = status(f"{p.url}/v2/models/slow/stats")[1]["model_stats"][0]["inference_stats"]
    return int(stats["compute_input"]["count"])


def keep_alive(p: ServeProcess) -> http.client.HTTPConnection:
    conn = http.client.HTTPConnection(p.host, p.port, timeout=10)
    conn.request("GET", "/v2/health/live")
    assert json.loads(conn.getresponse().read()) == {"live": True}
    return conn


def on(
    conn: http.client.HTTPConnection, method: str, path: str, body: bytes | None = None
) -> tuple[int, Any]:
    conn.request(method, path, body=body)
    r = conn.getresponse()
    return r.status, json.loads(r.read())


def wait_draining(conn: http.client.HTTPConnection) -> None:
    """Poll readiness on an open connection until the server says it is draining."""
    wait_until(
        lambda: on(conn, "GET", "/v2/health/ready") == (503, {"error": "not ready: draining"})
    )


def test_sigterm_drains_in_flight_work_refuses_new_and_exits_0(launch: Callable[..., ServeProcess]):
    # Two simulated GPUs, 1 s a request: 4 requests are 2 running and 2 queued at SIGTERM.
    p = launch(cost_ms=1000, devices="sim:2", drain_timeout=10)
    conn = keep_alive(p)
    with ThreadPoolExecutor(4) as pool:
        replies = send(pool, p, 4)
        wait_until(lambda: queued_or_running(p) == 4)
        sent = time.monotonic()
        p.proc.send_signal(signal.SIGTERM)
        wait_draining(conn)
        # A new request on an open keep-alive connection: 503; a new connection: refused.
        assert on(conn, "POST", "/v2/models/slow/infer", REQUEST) == (
            503,
            {"error": "not ready: draining"},
        )
        with pytest.raises(ConnectionRefusedError):
            http.client.HTTPConnection(p.host, p.port, timeout=5).connect()
        assert [r.result(timeout=20)[0] for r in replies] == [200] * 4  # in flight: finished
    assert p.proc.wait(timeout=10) == 0
    assert time.monotonic() - sent < 10  # within the drain timeout
    assert "drained in" in p.log.read_text()


def test_at_the_drain_timeout_what_is_left_answers_503(launch: Callable[..., ServeProcess]):
    # One simulated GPU, 5 s a request, a 0.5 s drain: 1 running and 2 queued are cut at 0.5 s.
    p = launch(cost_ms=5000, devices="sim:1", drain_timeout=0.5)
    with ThreadPoolExecutor(3) as pool:
        replies = send(pool, p, 3)
        wait_until(lambda: queued_or_running(p) == 3)
        sent = time.monotonic()
        p.proc.send_signal(signal.SIGTERM)
        answers = [r.result(timeout=20) for r in replies]
    message = "draining: not finished within the drain timeout (0.5 s)"
    assert answers == [(503, {"error": message})] * 3
    assert p.proc.wait(timeout=10) == 0
    assert time.monotonic() - sent < 4  # well before the running batch would have ended
    assert "drain timeout: 3 requests answered 503" in p.log.read_text()


def test_a_second_signal_exits_at_once(launch: Callable[..., ServeProcess]):
    p = launch(cost_ms=20_000, devices="sim:1", drain_timeout=60)
    conn = keep_alive(p)
    with ThreadPoolExecutor(1) as pool:
        reply = send(pool, p, 1)[0]
        wait_until(lambda: queued_or_running(p) == 1)
        p.proc.send_signal(signal.SIGTERM)
        wait_draining(conn)
        sent = time.monotonic()
        p.proc.send_signal(signal.SIGTERM)
        assert p.proc.wait(timeout=10) == 128 + signal.SIGTERM
        assert time.monotonic() - sent < 5
        with pytest.raises((ConnectionError, urllib.error.URLError, http.client.HTTPException)):
            reply.result(timeout=10)
    assert "second SIGTERM: exiting at once" in p.log.read_text()


class Held(Model):
    """``y = x``, batches of one; ``predict`` sets ``entered`` and waits for ``gate``."""

    def __init__(self, gate: threading.Event, entered: threading.Event) -> None:
        super().__init__(
            name="held",
            inputs=[TensorSpec("x", "FP32", (-1, 2))],
            outputs=[TensorSpec("y", "FP32", (-1, 2))],
            batching=Batching(max_batch_size=1),
        )
        self.gate, self.entered = gate, entered

    def predict(self, batch: Any) -> Any:
        self.entered.set()
        self.gate.wait(10)
        return {"y": batch["x"]}


def test_handle_stop_drains_too(tmp_path: Path):
    gate, entered = threading.Event(), threading.Event()
    model = Held(gate, entered)
    handle = start_in_thread(
        ServeConfig(port=0, devices="cpu", metrics_port=None, warmup_batches=0), [model]
    )
    url = f"{handle.url}/v2/models/held/infer"
    with ThreadPoolExecutor(2) as pool:
        reply = pool.submit(status, url, REQUEST)
        wait_until(entered.is_set)  # its batch runs
        stopping = pool.submit(handle.stop, drain_timeout=10)
        wait_until(lambda: handle.server.state == "draining")
        gate.set()
        assert reply.result(timeout=10)[0] == 200
        stopping.result(timeout=10)
    assert handle.server.state == "stopped"


def test_handle_stop_lets_a_grpc_call_in_flight_finish_and_refuses_new_ones(tmp_path: Path):
    gate, entered = threading.Event(), threading.Event()
    model = Held(gate, entered)
    config = ServeConfig(port=0, devices="cpu", metrics_port=None, grpc_port="0", warmup_batches=0)
    handle = start_in_thread(config, [model])
    target = f"127.0.0.1:{handle.server.grpc_port}"
    x = grpcclient.InferInput("x", [1, 2], "FP32")
    x.set_data_from_numpy(np.array([[1.0, 2.0]], dtype=np.float32))
    with grpcclient.InferenceServerClient(target) as c, ThreadPoolExecutor(2) as pool:
        reply = pool.submit(c.infer, "held", [x])
        wait_until(entered.is_set)  # its batch runs
        stopping = pool.submit(handle.stop, drain_timeout=10)
        wait_until(lambda: handle.server.state == "draining")
        late = grpcclient.InferenceServerClient(target)  # a new connection: refused
        with late, pytest.raises(InferenceServerException) as err:
            late.infer("held", [x], client_timeout=5)
        assert err.value.status() == "StatusCode.UNAVAILABLE", err.value
        gate.set()
        np.testing.assert_array_equal(reply.result(timeout=10).as_numpy("y"), [[1.0, 2.0]])
        stopping.result(timeout=10)
    assert handle.server.state == "stopped"
