"""KServe v2 gRPC on ``lanes serve`` (the native data plane's tonic front end): tritonclient's
gRPC clients, sync and asyncio, unchanged, against a Python model; the port setting
(``auto``, ``off``, a number, a busy port)."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as grpcaio
from tritonclient.utils import InferenceServerException

from lanes.errors import LanesError
from lanes.models.base import Batching, Model, TensorSpec
from lanes.serving import Handle, ServeConfig, start_in_thread
from lanes.serving.config import check, resolve

X = [TensorSpec("x", "FP32", (-1, 2))]
Y = [TensorSpec("y", "FP32", (-1, 2))]


class Double(Model):
    """``y = 2x``; ``predict`` waits at ``gate`` (open unless a test closes it)."""

    gate = threading.Event()

    def predict(self, batch: Any) -> dict[str, np.ndarray]:
        assert self.gate.wait(timeout=30)
        return {"y": np.asarray(batch["x"]) * 2}


@pytest.fixture
def served() -> Iterator[Handle]:
    Double.gate.set()
    model = Double(name="double", inputs=X, outputs=Y, batching=Batching(max_batch_size=8))
    config = ServeConfig(port=0, metrics_port=None, grpc_port="0", warmup_batches=0)
    with start_in_thread(config, [model]) as h:
        yield h
    Double.gate.set()


def request(rows: int = 1) -> list[grpcclient.InferInput]:
    x = grpcclient.InferInput("x", [rows, 2], "FP32")
    x.set_data_from_numpy(np.arange(rows * 2, dtype=np.float32).reshape(rows, 2))
    return [x]


def test_tritonclient_grpc_sync_infers_with_id_and_metadata(served: Handle) -> None:
    port = served.server.grpc_port
    assert port
    with grpcclient.InferenceServerClient(f"127.0.0.1:{port}") as c:
        assert c.is_server_live() and c.is_server_ready() and c.is_model_ready("double")
        meta = c.get_model_metadata("double")
        assert meta.name == "double" and meta.platform == "python"
        inputs = [(t.name, t.datatype, list(t.shape)) for t in meta.inputs]
        assert inputs == [("x", "FP32", [-1, 2])]
        result = c.infer("double", request(3), request_id="r-7")
        assert result.get_response().id == "r-7"
        np.testing.assert_array_equal(
            result.as_numpy("y"), np.arange(6, dtype=np.float32).reshape(3, 2) * 2
        )
        with pytest.raises(InferenceServerException) as err:
            c.infer("nope", request())
        assert "unknown model 'nope'" in str(err.value)
        assert err.value.status() == "StatusCode.NOT_FOUND"


def expire_one(c: grpcclient.InferenceServerClient, **deadline: float) -> list[Any]:
    """A call held on the device, and one after it whose deadline passes before it is
    answered: ``DEADLINE_EXCEEDED``. The deadline is its ``grpc-timeout`` (0.2 s; the front end
    cuts the call, whether it waits in the queue or on the other device), or as ``deadline``
    gives it to tritonclient's ``infer`` (``timeout=`` µs: the KServe parameter, which expires
    the request while it is queued). Returns the held call's result, once released."""
    Double.gate.clear()  # the next batch holds the device
    held: list[Any] = []
    blocker = threading.Thread(target=lambda: held.append(c.infer("double", request())))
    blocker.start()
    with pytest.raises(InferenceServerException) as err:
        c.infer("double", request(), **(deadline or {"client_timeout": 0.2}))
    assert err.value.status() == "StatusCode.DEADLINE_EXCEEDED"
    Double.gate.set()
    blocker.join(timeout=10)
    return held


def test_a_grpc_timeout_is_the_requests_deadline(served: Handle) -> None:
    port = served.server.grpc_port
    with grpcclient.InferenceServerClient(f"127.0.0.1:{port}") as c:
        held = expire_one(c)
    assert held and held[0].as_numpy("y") is not None


def test_tritonclient_grpc_asyncio_serves_concurrent_requests(served: Handle) -> None:
    port = served.server.grpc_port

    async def run() -> list[np.ndarray]:
        async with grpcaio.InferenceServerClient(f"127.0.0.1:{port}") as c:
            results = await asyncio.gather(*(c.infer("double", request(2)) for _ in range(30)))
        return [r.as_numpy("y") for r in results]

    outputs = asyncio.run(run())
    assert len(outputs) == 30
    for y in outputs:
        np.testing.assert_array_equal(y, np.arange(4, dtype=np.float32).reshape(2, 2) * 2)


def test_the_grpc_port_setting() -> None:
    assert resolve({}, env={}).grpc_bind == 8001  # beside the default --port 8000, as Triton
    assert resolve({"port": "9000"}, env={}).grpc_bind == 0  # any free port, announced
    assert resolve({"grpc_port": "off"}, env={}).grpc_bind is None
    assert resolve({}, env={"LANES_SERVE_GRPC_PORT": "7001"}).grpc_bind == 7001
    with pytest.raises(LanesError) as err:
        resolve({"grpc_port": "70000"}, env={})
    assert "--grpc-port = 70000: must be 0..65535" in err.value.message
    # A range error names the setting where its value came from.
    with pytest.raises(LanesError) as err:
        resolve({}, env={"LANES_SERVE_GRPC_PORT": "70000"})
    assert err.value.message.startswith("LANES_SERVE_GRPC_PORT = 70000: must be 0..65535")
    with pytest.raises(LanesError) as err:
        check(replace(ServeConfig(), grpc_port="70000"))  # the Python API: the field
    assert err.value.message.startswith("grpc_port = 70000: must be 0..65535")
    with pytest.raises(LanesError) as err:
        resolve({"grpc_port": "x"}, env={})
    assert err.value.message == "--grpc-port = 'x': not a valid value"


def test_grpc_off_and_a_busy_grpc_port() -> None:
    model = Double(name="double", inputs=X, outputs=Y)
    config = ServeConfig(port=0, metrics_port=None, grpc_port="off", warmup_batches=0)
    with start_in_thread(config, [model]) as h:
        assert h.server.grpc_port is None
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(LanesError) as err:
            start_in_thread(
                ServeConfig(port=0, metrics_port=None, grpc_port=str(port), warmup_batches=0),
                [model],
            )
    assert err.value.message.startswith(f"cannot listen on 127.0.0.1:{port}: ")
    assert "--grpc-port" in err.value.message


def test_grpc_requests_have_spans_too() -> None:
    """``--trace-requests`` keeps gRPC requests' spans as it keeps REST's (docs/metrics.md)."""
    import json
    import urllib.request

    Double.gate.set()
    model = Double(name="double", inputs=X, outputs=Y, batching=Batching(max_batch_size=8))
    config = ServeConfig(
        port=0, metrics_port=None, grpc_port="0", warmup_batches=0, trace_requests=10
    )
    with start_in_thread(config, [model]) as h:
        with grpcclient.InferenceServerClient(f"127.0.0.1:{h.server.grpc_port}") as c:
            for _ in range(3):
                c.infer("double", request(2))
        with urllib.request.urlopen(f"{h.url}/v2/trace?seconds=60", timeout=10) as r:
            trace = json.loads(r.read())
    spans = [e["args"] for e in trace["traceEvents"] if e["ph"] == "b" and "args" in e]
    assert len(spans) == 3 == trace["otherData"]["requests"]
    assert all(s["model"] == "double" and s["batch_size"] == 2 for s in spans)
    assert all(s["total_ms"] >= s["scheduled_ms"] >= s["run_ms"] > 0 for s in spans)


def test_grpc_calls_count_in_the_metrics_and_statistics_as_rest_requests_do() -> None:
    """docs/metrics.md: ``lanes_requests_total`` holds every request that names a served model,
    in exactly one outcome, whichever front end it came through: here a REST request, three
    gRPC calls answered, one whose deadline passed while it was queued (504,
    ``deadline_exceeded``), and one naming no served model (counted nowhere). The deadline is
    the KServe ``timeout`` parameter under ``fifo`` (one batch of the model at a time, so the
    call waits in the queue), which only the server enforces: with a ``grpc-timeout`` the
    client's own timer races the server's cut, and a client that gives up first is
    ``cancelled``."""
    import json
    import urllib.request

    from tests.serving.test_metrics import model_stats, scrape, value

    Double.gate.set()
    model = Double(name="double", inputs=X, outputs=Y, batching=Batching(max_batch_size=8))
    config = ServeConfig(port=0, metrics_port=0, grpc_port="0", warmup_batches=0, policy="fifo")
    with start_in_thread(config, [model]) as h:
        body = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 2], "data": [1, 2]}]}
        req = urllib.request.Request(
            f"{h.url}/v2/models/double/infer", data=json.dumps(body).encode(), method="POST"
        )
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 200
        with grpcclient.InferenceServerClient(f"127.0.0.1:{h.server.grpc_port}") as c:
            for _ in range(3):
                c.infer("double", request(2))
            with pytest.raises(InferenceServerException):
                c.infer("nope", request())
            assert expire_one(c, timeout=100_000, client_timeout=10)
        families = scrape(h)
        stats = model_stats(h, "double")
    assert value(families, "lanes_requests_total", model="double", outcome="success") == 5
    assert value(families, "lanes_requests_total", model="double", outcome="deadline_exceeded") == 1
    assert value(families, "lanes_request_duration_seconds_count", model="double") == 5
    assert stats["inference_stats"]["success"]["count"] == 5
