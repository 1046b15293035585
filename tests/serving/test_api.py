"""``lanes serve`` over real loopback HTTP, no mocks: servers started in-process with
:func:`lanes.serving.start_in_thread` (port 0) and small models defined here (plus one ONNX
model from a repository written to a temporary folder).

What it proves: outputs equal direct ONNX Runtime runs; batches form under concurrent load and a
partial batch is held for ``batch_timeout_micros`` (and not when it is 0); tritonclient's JSON and
binary round trips, health, metadata and statistics calls, with and without ``versions/{v}``;
every refusal of design.md §3 answers its status with ``{"error": ...}`` and the server keeps
serving; expired requests and requests of clients that went away never reach the device.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import onnxruntime as ort
import pytest
import tritonclient.http as triton
from onnx_repository import write_onnx_repository
from tritonclient.utils import InferenceServerException

from lanes.errors import BAD_INPUT, LanesError
from lanes.models import Batching, Model, TensorSpec
from lanes.models.repository import load_repository
from lanes.serving import Handle, ServeConfig, start_in_thread
from lanes.serving.default_policy import CPU_POLICY

X = [TensorSpec("x", "FP32", (-1, 2))]
Y = [TensorSpec("y", "FP32", (-1, 2))]
HEADER_LENGTH = "Inference-Header-Content-Length"
BODY_LIMIT_MB = 1 / 16  # 64 KiB on the shared server: small enough to test 413 cheaply


# -- models ---------------------------------------------------------------------------------------


@dataclass(eq=False)
class Probe(Model):
    """``y = 2x`` (x, y FP32 [N, 2]) that records the rows of every batch it runs (shared by its
    replicas: they are shallow copies). :meth:`hold` stops the next batches at a gate until
    :meth:`release`; ``entered`` is set when a batch reaches the device. A negative input makes
    ``predict`` raise."""

    ran: list[int] = field(default_factory=list)
    gate: threading.Event = field(default_factory=threading.Event)
    entered: threading.Event = field(default_factory=threading.Event)
    sleep_s: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        self.gate.set()

    def hold(self) -> None:
        self.entered.clear()
        self.gate.clear()

    def release(self) -> None:
        self.gate.set()

    def predict(self, batch: Any) -> dict[str, np.ndarray]:
        x = batch["x"]
        self.ran.append(len(x))
        self.entered.set()
        if not self.gate.wait(timeout=30):
            raise RuntimeError("the test never opened the gate")
        if self.sleep_s:
            time.sleep(self.sleep_s)
        if (x < 0).any():
            raise ValueError("negative input")
        return {"y": x * 2}


def probe(name: str, *, timeout_ms: float | None = None, **batching: int) -> Probe:
    return Probe(
        name=name, inputs=X, outputs=Y, batching=Batching(**batching), timeout_ms=timeout_ms
    )


class Mixed(Model):
    """FP32 and BYTES in and out: ``y = 2x``, ``n`` = ``s`` upper-cased."""

    def predict(self, batch: Any) -> dict[str, np.ndarray]:
        upper = np.array([s.upper() for s in batch["s"]], dtype=object)
        return {"y": batch["x"] * 2, "n": upper}


def mixed() -> Mixed:
    return Mixed(
        name="mixed",
        inputs=[TensorSpec("x", "FP32", (-1, 2)), TensorSpec("s", "BYTES", (-1,))],
        outputs=[TensorSpec("y", "FP32", (-1, 2)), TensorSpec("n", "BYTES", (-1,))],
        batching=Batching(4),
    )


class Faulty(Model):
    """``y = x``; ``x[0, 0]`` picks a failure: 1 preprocess raises ``LanesError(bad_input)``,
    2 preprocess raises, 3 predict raises, 4 postprocess raises, 5 postprocess returns a dtype
    with no KServe datatype, 6 postprocess returns no dict at all."""

    @staticmethod
    def case(x: np.ndarray) -> int:
        return int(x[0, 0])

    def preprocess(self, inputs: Any) -> Any:
        if self.case(inputs["x"]) == 1:
            raise LanesError(BAD_INPUT, "x: this model takes no 1s")
        if self.case(inputs["x"]) == 2:
            raise RuntimeError("preprocess broke")
        return inputs

    def predict(self, batch: Any) -> dict[str, np.ndarray]:
        if self.case(batch["x"]) == 3:
            raise ValueError("predict broke")
        return {"y": batch["x"]}

    def postprocess(self, output: Any) -> Any:
        case = self.case(output["y"])
        if case == 4:
            raise KeyError("postprocess broke")
        if case == 5:
            return {"y": np.array([1 + 2j])}
        if case == 6:
            return None
        return output


# -- HTTP -----------------------------------------------------------------------------------------


@dataclass
class Reply:
    status: int
    headers: Message  # header names are case-insensitive
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def error(self) -> str:
        """The message of an error reply, checking its shape: JSON ``{"error": "..."}``."""
        assert self.headers["Content-Type"].startswith("application/json"), self.headers
        payload = self.json()
        assert list(payload) == ["error"], payload
        assert isinstance(payload["error"], str) and payload["error"]
        return str(payload["error"])


def http(
    url: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    method: str | None = None,
    timeout: float = 15,
) -> Reply:
    request = urllib.request.Request(url, data=body, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return Reply(r.status, r.headers, r.read())
    except urllib.error.HTTPError as err:
        with err:
            return Reply(err.code, err.headers, err.read())


def tensor(
    name: str = "x", shape: Sequence[int] = (1, 2), datatype: str = "FP32", data: Any = (1, 2)
) -> dict[str, Any]:
    return {"name": name, "shape": list(shape), "datatype": datatype, "data": list(data)}


def body(*inputs: dict[str, Any], **extra: Any) -> bytes:
    return json.dumps({"inputs": list(inputs or [tensor()]), **extra}).encode()


def binary_body(
    x: np.ndarray, size: int | None = None, raw: bytes | None = None
) -> tuple[bytes, dict[str, str]]:
    """A binary-extension request for input ``x`` (its declared size and bytes overridable)."""
    raw = x.astype("<f4").tobytes() if raw is None else raw
    size = len(raw) if size is None else size
    parameters = {"binary_data_size": size}
    head = json.dumps(
        {
            "inputs": [
                {"name": "x", "shape": list(x.shape), "datatype": "FP32", "parameters": parameters}
            ]
        }
    ).encode()
    return head + raw, {HEADER_LENGTH: str(len(head)), "Content-Type": "application/octet-stream"}


def infer(
    h: Handle,
    model: str,
    data: Sequence[float] = (1, 2),
    headers: dict[str, str] | None = None,
    **parameters: Any,
) -> Reply:
    rows = len(data) // 2
    extra = {"parameters": parameters} if parameters else {}
    return http(
        f"{h.url}/v2/models/{model}/infer",
        body(tensor(shape=(rows, 2), data=data), **extra),
        headers,
    )


def stats(h: Handle, model: str) -> dict[str, Any]:
    reply = http(f"{h.url}/v2/models/{model}/stats")
    assert reply.status == 200
    (only,) = reply.json()["model_stats"]
    return dict(only)


def batches(h: Handle, model: str) -> dict[int, int]:
    """Batch size → number of batches of that size, from the Triton-style ``batch_stats``."""
    return {b["batch_size"]: b["compute_infer"]["count"] for b in stats(h, model)["batch_stats"]}


def assert_serves(h: Handle, model: str = "double") -> None:
    """The server is healthy: ready, and a good request gets the right answer."""
    assert http(f"{h.url}/v2/health/ready").status == 200
    reply = infer(h, model, (1.5, -0.0, 3.0, 4.0))
    assert reply.status == 200, reply.body
    (y,) = reply.json()["outputs"]
    assert y == {"name": "y", "datatype": "FP32", "shape": [2, 2], "data": [3.0, -0.0, 6.0, 8.0]}


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll ``condition`` until it holds (the server's state is read, never guessed by sleeping)."""
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise AssertionError("condition not met in time")
        time.sleep(0.002)


def queued_rows(h: Handle, model: str) -> int:
    return h.server.queued_rows(model)


def client(h: Handle, **kwargs: Any) -> triton.InferenceServerClient:
    return triton.InferenceServerClient(h.url.removeprefix("http://"), **kwargs)


# -- servers --------------------------------------------------------------------------------------


@dataclass
class Api:
    """The shared server: ``double`` (a :class:`Probe`), ``mixed``, ``faulty`` and ``affine``
    (ONNX) on one CPU device, with a 64 KiB body limit."""

    handle: Handle
    onnx_file: Path

    @property
    def url(self) -> str:
        return self.handle.url


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    root = tmp_path_factory.mktemp("repo")
    onnx_file = write_onnx_repository(root)
    models: list[Model] = [
        *load_repository(root),
        probe("double", max_batch_size=8),
        mixed(),
        Faulty(name="faulty", inputs=X, outputs=Y, batching=Batching(4)),
    ]
    config = ServeConfig(
        port=0, metrics_port=None, devices="cpu", max_body_mb=BODY_LIMIT_MB, warmup_batches=0
    )
    with start_in_thread(config, models) as handle:
        yield Api(handle, onnx_file)


@pytest.fixture
def serve() -> Iterator[Callable[..., Handle]]:
    """``serve(*models, devices="cpu", **config)`` starts a server for one test; at teardown every
    :class:`Probe` gate opens and every server stops."""
    handles: list[Handle] = []
    probes: list[Probe] = []

    def start(*models: Model, devices: str = "cpu", **config: Any) -> Handle:
        probes.extend(m for m in models if isinstance(m, Probe))
        handle = start_in_thread(
            ServeConfig(
                **{"port": 0, "metrics_port": None, "warmup_batches": 0, "devices": devices}
                | config
            ),
            models,
        )
        handles.append(handle)
        return handle

    yield start
    for p in probes:
        p.release()
    for handle in handles:
        handle.stop()


# -- health, metadata, statistics -----------------------------------------------------------------


def test_health_and_server_metadata(api: Api) -> None:
    from lanes import _core

    live = http(f"{api.url}/v2/health/live")
    assert (live.status, live.json()) == (200, {"live": True})
    ready = http(f"{api.url}/v2/health/ready")
    assert (ready.status, ready.json()) == (200, {"ready": True})
    meta = http(f"{api.url}/v2").json()
    assert meta["name"] == "lanes"
    assert meta["version"] == _core.version()
    assert {"binary_tensor_data", "statistics"} <= set(meta["extensions"])
    # the default policy, auto: sjf on one CPU executor of all the cores (GPU-like on 1 core)
    assert meta["policy"] == ("sjf" if (os.cpu_count() or 1) > 1 else CPU_POLICY)
    assert meta["devices"] == [{"name": "cpu:0", "simulated": False}]


def test_model_metadata_in_both_url_forms(api: Api) -> None:
    meta = http(f"{api.url}/v2/models/double").json()
    assert meta == http(f"{api.url}/v2/models/double/versions/1").json()
    assert meta == {
        "name": "double",
        "versions": ["1"],
        "platform": "python",
        "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 2]}],
        "outputs": [{"name": "y", "datatype": "FP32", "shape": [-1, 2]}],
        "parameters": {
            "max_batch_size": 8,
            "batch_timeout_micros": 0,
            "num_batch_threads": 1,
            "max_enqueued_batches": 64,
            "timeout_ms": None,
            "devices": ["cpu:0"],
        },
    }
    affine = http(f"{api.url}/v2/models/affine").json()
    assert affine["platform"] == "onnxruntime_onnx"
    assert [o["name"] for o in affine["outputs"]] == ["y", "k"]
    ready = http(f"{api.url}/v2/models/double/versions/1/ready")
    assert (ready.status, ready.json()) == (200, {"name": "double", "ready": True})


def test_statistics_have_tritons_shape(api: Api) -> None:
    before = stats(api.handle, "mixed")
    assert infer(api.handle, "double").status == 200
    every = http(f"{api.url}/v2/models/stats").json()["model_stats"]
    assert [s["name"] for s in every] == ["affine", "double", "mixed", "faulty"]
    one = stats(api.handle, "double")
    assert one == http(f"{api.url}/v2/models/double/versions/1/stats").json()["model_stats"][0]
    assert set(one) == {
        "name",
        "version",
        "last_inference",
        "inference_count",
        "execution_count",
        "inference_stats",
        "batch_stats",
        "lanes",
        "cost_estimates",
    }
    sizes = [e["batch_size"] for e in one["cost_estimates"]]  # 1, 2, 4, ..., max_batch_size
    assert sizes[0] == 1 and sizes == sorted(set(sizes))
    assert all(e["ns"] > 0 for e in one["cost_estimates"])
    assert set(one["inference_stats"]) == {
        "success",
        "fail",
        "queue",
        "compute_input",
        "compute_infer",
        "compute_output",
        "cache_hit",
        "cache_miss",
    }
    assert one["inference_stats"]["success"]["count"] >= 1
    assert one["inference_count"] >= 1 and one["execution_count"] >= 1
    assert set(one["batch_stats"][0]) == {
        "batch_size",
        "compute_input",
        "compute_infer",
        "compute_output",
    }
    assert set(one["lanes"]) == {"rejected", "expired", "cancelled"}
    assert stats(api.handle, "mixed") == before  # counters are per model


def test_simulated_devices_are_labelled(serve: Callable[..., Handle]) -> None:
    h = serve(probe("double", max_batch_size=4), devices="sim:2")
    meta = http(f"{h.url}/v2").json()
    assert meta["devices"] == [
        {"name": "sim:0", "simulated": True},
        {"name": "sim:1", "simulated": True},
    ]
    assert http(f"{h.url}/v2/models/double").json()["parameters"]["devices"] == ["sim:0", "sim:1"]
    assert_serves(h)


# -- outputs --------------------------------------------------------------------------------------


def test_onnx_outputs_equal_direct_onnxruntime_runs(api: Api) -> None:
    session = ort.InferenceSession(str(api.onnx_file), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    xs = [rng.normal(size=(rows, 4)).astype(np.float32) for rows in (1, 3, 2, 5, 1, 4, 2, 8, 1, 3)]
    before = stats(api.handle, "affine")
    with client(api.handle, concurrency=len(xs)) as c:
        pending = []
        for i, x in enumerate(xs):
            binary = i % 2 == 0
            inp = triton.InferInput("x", list(x.shape), "FP32")
            inp.set_data_from_numpy(x, binary_data=binary)
            outputs = [triton.InferRequestedOutput(n, binary_data=not binary) for n in ("y", "k")]
            pending.append(c.async_infer("affine", [inp], outputs=outputs))
        results = [p.get_result(timeout=15) for p in pending]
    for x, result in zip(xs, results, strict=True):
        y, k = session.run(["y", "k"], {"x": x})
        np.testing.assert_allclose(result.as_numpy("y"), y, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(result.as_numpy("k"), k)
        assert result.as_numpy("k").dtype == np.int64
    after = stats(api.handle, "affine")
    assert after["inference_count"] - before["inference_count"] == sum(len(x) for x in xs)
    # Sent at once, with a 50 ms batch timeout: requests shared batches, and still got their rows.
    assert after["execution_count"] - before["execution_count"] < len(xs)


# -- batching -------------------------------------------------------------------------------------


def test_concurrent_requests_form_one_full_batch(serve: Callable[..., Handle]) -> None:
    # A 2 s timeout: the batch can only start early by filling up, which the 8 requests do.
    model = probe("double", max_batch_size=8, batch_timeout_micros=2_000_000)
    h = serve(model)
    start = threading.Barrier(8)

    def send(i: int) -> Reply:
        start.wait()
        return infer(h, "double", (i, i))

    t0 = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(send, range(8)))
    elapsed = time.monotonic() - t0
    for i, reply in enumerate(replies):
        assert reply.status == 200
        assert reply.json()["outputs"][0]["data"] == [2 * i, 2 * i]  # each got its own rows back
    assert model.ran == [8]
    assert batches(h, "double") == {8: 1}
    s = stats(h, "double")
    assert (s["execution_count"], s["inference_count"]) == (1, 8)
    assert elapsed < 1.5  # a full batch does not wait for the timeout


class Short(Model):
    """``y = 2x`` that drops the batch's last row: a model whose output does not have the
    batch's rows."""

    def predict(self, batch: Any) -> dict[str, np.ndarray]:
        return {"y": batch["x"][:-1] * 2}


class Concat(Probe):
    """:class:`Probe` with its own ``collate``: not stacked by the server."""

    def collate(self, items: Sequence[Any]) -> Any:
        return super().collate(items)


def test_a_batch_is_stacked_in_rust_with_no_per_request_python(
    serve: Callable[..., Handle], monkeypatch: pytest.MonkeyPatch
) -> None:
    from lanes.serving import bridge

    calls = {"run_batch": 0, "run_stacked": 0}
    for name in calls:
        real = getattr(bridge, name)

        def counted(*args: Any, _real: Any = real, _name: str = name) -> Any:
            calls[_name] += 1
            return _real(*args)

        monkeypatch.setattr(bridge, name, counted)
    timeout = {"max_batch_size": 6, "batch_timeout_micros": 2_000_000}
    model = probe("double", **timeout)
    custom = Concat(name="custom", inputs=X, outputs=Y, batching=Batching(**timeout))
    short = Short(name="short", inputs=X, outputs=Y, batching=Batching(**timeout))
    h = serve(model, custom, short)
    # Requests of 1, 2 and 3 rows fill one batch of 6 and each gets its own rows back.
    sent = [(1.0, 2.0), (3.0, 4.0, 5.0, 6.0), (7.0, 8.0, 9.0, 10.0, 11.0, 12.0)]
    for name, path in (("double", "run_stacked"), ("custom", "run_batch")):
        before = dict(calls)
        with ThreadPoolExecutor(3) as pool:
            replies = list(pool.map(lambda d, n=name: infer(h, n, d), sent))
        for data, reply in zip(sent, replies, strict=True):
            assert reply.status == 200, reply.body
            (y,) = reply.json()["outputs"]
            assert (y["shape"], y["data"]) == ([len(data) // 2, 2], [2 * v for v in data])
        assert {k: calls[k] - before[k] for k in calls} == {
            "run_batch": int(path == "run_batch"),
            "run_stacked": int(path == "run_stacked"),
        }, name
    assert model.ran == [6]
    # An output without the batch's rows fails the batch (500) with a message naming it.
    with ThreadPoolExecutor(3) as pool:
        replies = list(pool.map(lambda d: infer(h, "short", d), sent))
    for reply in replies:
        assert reply.status == 500
        assert "output 'y' has shape [5, 2]" in reply.json()["error"], reply.body
        assert "the batch's 6 rows" in reply.json()["error"]
    assert_serves(h)


@pytest.mark.parametrize(("timeout_us", "held"), [(100_000, True), (0, False)])
def test_a_lone_request_waits_for_the_batch_timeout_only_when_there_is_one(
    serve: Callable[..., Handle], timeout_us: int, held: bool
) -> None:
    h = serve(probe("double", max_batch_size=8, batch_timeout_micros=timeout_us))
    t0 = time.monotonic()
    assert infer(h, "double").status == 200
    latency = time.monotonic() - t0
    assert batches(h, "double") == {1: 1}
    queue_ns = stats(h, "double")["inference_stats"]["queue"]
    assert queue_ns["count"] == 1
    if held:
        assert latency >= 0.1
        assert queue_ns["ns"] >= 100_000_000
    else:  # eager: an idle device takes it at once (half the other case's hold as the margin)
        assert queue_ns["ns"] < 50_000_000


# -- tritonclient ---------------------------------------------------------------------------------


@pytest.mark.parametrize("binary_in", [True, False], ids=["bin-in", "json-in"])
@pytest.mark.parametrize("binary_out", [True, False], ids=["bin-out", "json-out"])
@pytest.mark.parametrize("version", ["", "1"], ids=["latest", "v1"])
def test_tritonclient_round_trips(
    api: Api, binary_in: bool, binary_out: bool, version: str
) -> None:
    x = np.arange(6, dtype=np.float32).reshape(3, 2) - 2.5
    s = np.array([b"a", b"bc", "é".encode()], dtype=object)
    inputs = [triton.InferInput("x", [3, 2], "FP32"), triton.InferInput("s", [3], "BYTES")]
    inputs[0].set_data_from_numpy(x, binary_data=binary_in)
    inputs[1].set_data_from_numpy(s, binary_data=binary_in)
    outputs = [triton.InferRequestedOutput(n, binary_data=binary_out) for n in ("n", "y")]
    with client(api.handle) as c:
        result = c.infer("mixed", inputs, model_version=version, outputs=outputs, request_id="r-7")
    response = result.get_response()
    assert (response["model_name"], response["model_version"], response["id"]) == (
        "mixed",
        "1",
        "r-7",
    )
    assert [o["name"] for o in response["outputs"]] == ["n", "y"]
    for o in response["outputs"]:
        assert ("data" in o) is not binary_out
    np.testing.assert_array_equal(result.as_numpy("y"), 2 * x)
    n = result.as_numpy("n")
    assert n is not None
    expected = [b"A", b"BC", "é".encode()]
    assert [v if isinstance(v, bytes) else v.encode() for v in n] == expected


def test_tritonclient_health_metadata_and_statistics(api: Api) -> None:
    with client(api.handle) as c:
        assert c.is_server_live()
        assert c.is_server_ready()
        assert c.is_model_ready("double")
        assert c.is_model_ready("double", "1")
        assert not c.is_model_ready("double", "7")
        assert not c.is_model_ready("nope")
        assert c.get_server_metadata()["name"] == "lanes"
        meta = c.get_model_metadata("mixed", "1")
        assert meta["name"] == "mixed" and meta["versions"] == ["1"]
        assert [i["datatype"] for i in meta["inputs"]] == ["FP32", "BYTES"]
        with pytest.raises(InferenceServerException) as err:
            c.get_model_metadata("mixed", "7")
        assert err.value.status() == "404"
        assert "has no version '7'" in err.value.message()
        one = c.get_inference_statistics("double", "1")["model_stats"]
        assert [s["name"] for s in one] == ["double"]
        every = c.get_inference_statistics()["model_stats"]
        assert {s["name"] for s in every} == {"affine", "double", "mixed", "faulty"}
        x = triton.InferInput("x", [1, 2], "FP32")
        x.set_data_from_numpy(np.ones((1, 2), np.float32))
        with pytest.raises(InferenceServerException) as err:
            c.infer("nope", [x])
        assert err.value.status() == "404"
        assert "unknown model 'nope'" in err.value.message()


# -- refusals -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bad:
    """A request the shared server refuses, and what it must answer."""

    status: int
    says: str
    body: bytes | None = body()
    headers: dict[str, str] = field(default_factory=dict)
    path: str = "/v2/models/double/infer"
    method: str | None = None


def _binary(says: str, size: int | None = None, raw: bytes | None = None, **headers: str) -> Bad:
    """A binary-extension request for ``double`` (1 x 2 FP32), sizes and headers overridable."""
    payload, binary_headers = binary_body(np.ones((1, 2), np.float32), size, raw)
    return Bad(400, says, payload, {**binary_headers, **headers})


BAD: dict[str, Bad] = {
    # 400: malformed or invalid input
    "malformed-json": Bad(400, "not valid JSON", b'{"inputs": ['),
    "empty-body": Bad(400, "not valid JSON", b""),
    "not-an-object": Bad(400, "must be a JSON object", b"[1, 2]"),
    "no-inputs": Bad(400, "no 'inputs'", b"{}"),
    "wrong-dtype": Bad(400, "datatype INT32, expected FP32", body(tensor(datatype="INT32"))),
    "not-a-dtype": Bad(400, "not a KServe datatype", body(tensor(datatype="FLOAT"))),
    "wrong-shape": Bad(
        400, "does not match the declared shape", body(tensor(shape=(1, 3), data=(1, 2, 3)))
    ),
    "data-count": Bad(400, "shape [2, 2] needs 4", body(tensor(shape=(2, 2)))),
    "zero-rows": Bad(400, "the batch dimension is 0", body(tensor(shape=(0, 2), data=()))),
    "unknown-input": Bad(400, "unknown input 'z'", body(tensor(), tensor("z"))),
    "missing-input": Bad(400, "missing input x", b'{"inputs": []}'),
    "unknown-output": Bad(400, "unknown output 'nope'", body(outputs=[{"name": "nope"}])),
    "binary-size-vs-shape": _binary("needs 8 bytes", raw=b"\0" * 4),
    "binary-sizes-dont-add-up": _binary("add up to 8", size=8, raw=b"\0" * 12),
    "binary-size-past-the-end": _binary("runs past the end", size=16, raw=b"\0" * 8),
    "header-length-past-the-end": _binary(
        "between 0 and the body length", **{HEADER_LENGTH: "100000"}
    ),
    "header-length-not-a-number": _binary("must be an integer", **{HEADER_LENGTH: "ten"}),
    "header-length-underscored": _binary("must be an integer", **{HEADER_LENGTH: "1_0"}),
    "too-many-dimensions": Bad(
        400, "shape has 65 dimensions; at most 32", body(tensor(shape=[1] * 65, data=[1]))
    ),
    "corrupt-content-encoding": Bad(
        400,
        "request body cannot be read: Can not decode content-encoding: gzip",
        body(),
        {"Content-Encoding": "gzip"},
    ),
    "binary-without-header-length": Bad(
        400, "no Inference-Header-Content-Length", binary_body(np.ones((1, 2)), raw=b"")[0]
    ),
    "timeout-negative": Bad(400, "'timeout' -5", body(parameters={"timeout": -5})),
    "timeout-zero": Bad(
        400, "timeout = 0: must be microseconds > 0", body(parameters={"timeout": 0})
    ),
    "timeout-string": Bad(400, "'timeout' '5'", body(parameters={"timeout": "5"})),
    "timeout-float": Bad(400, "'timeout' 1.5", body(parameters={"timeout": 1.5})),
    "timeout-header-text": Bad(
        400, "lanes-timeout-ms: 'soon'", headers={"lanes-timeout-ms": "soon"}
    ),
    "timeout-header-zero": Bad(400, "lanes-timeout-ms: '0'", headers={"lanes-timeout-ms": "0"}),
    "timeout-header-negative": Bad(
        400, "must be milliseconds > 0", headers={"lanes-timeout-ms": "-3"}
    ),
    "timeout-header-nan": Bad(400, "must be milliseconds > 0", headers={"lanes-timeout-ms": "nan"}),
    "timeout-header-underscored": Bad(
        400, "must be milliseconds > 0", headers={"lanes-timeout-ms": "1_0"}
    ),
    "timeout-header-infinite": Bad(
        400, "must be milliseconds > 0", headers={"lanes-timeout-ms": "inf"}
    ),
    # 404: unknown model or version (or route); 405: a route's wrong method
    "unknown-model": Bad(
        404, "unknown model 'nope'; this server has: affine, double", path="/v2/models/nope/infer"
    ),
    "unknown-version": Bad(
        404,
        "model 'double' has no version '2' (it has 1)",
        path="/v2/models/double/versions/2/infer",
    ),
    "unknown-model-metadata": Bad(404, "unknown model 'nope'", None, path="/v2/models/nope"),
    "unknown-model-ready": Bad(404, "unknown model 'nope'", None, path="/v2/models/nope/ready"),
    "unknown-version-stats": Bad(
        404, "no version '0'", None, path="/v2/models/double/versions/0/stats"
    ),
    "unknown-route": Bad(404, "no route /v2/nothing", None, path="/v2/nothing"),
    "infer-by-get": Bad(
        405, "method GET not allowed on /v2/models/double/infer: POST", None, method="GET"
    ),
    # 413: body over the limit (64 KiB here), JSON or binary
    "body-over-limit": Bad(413, "over the limit", body(tensor(), pad="x" * 100_000)),
    "binary-body-over-limit": Bad(
        413, "over the limit", *binary_body(np.ones((20_000, 2), np.float32))
    ),
}


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_every_bad_request_gets_its_status_and_the_server_keeps_serving(
    api: Api, case: str
) -> None:
    bad = BAD[case]
    reply = http(api.url + bad.path, bad.body, bad.headers, bad.method)
    assert reply.status == bad.status, reply.body
    assert bad.says in reply.error
    assert_serves(api.handle)


@pytest.mark.parametrize(
    ("case", "status", "says"),
    [
        (1, 400, "x: this model takes no 1s"),
        (2, 500, "model 'faulty' preprocess failed: RuntimeError: preprocess broke"),
        (3, 500, "model 'faulty' failed: ValueError: predict broke"),
        (4, 500, "model 'faulty' postprocess failed: KeyError: 'postprocess broke'"),
        (5, 500, "output 'y': dtype complex128 has no KServe datatype"),
        (6, 500, "internal error: TypeError"),
    ],
)
def test_a_model_failure_answers_that_request_and_the_model_keeps_serving(
    api: Api, case: int, status: int, says: str
) -> None:
    reply = infer(api.handle, "faulty", (case, 0))
    assert reply.status == status
    assert says in reply.error
    good = infer(api.handle, "faulty", (7, 8))
    assert good.status == 200
    assert good.json()["outputs"][0]["data"] == [7, 8]


def test_a_predict_failure_is_counted_and_the_next_request_succeeds(api: Api) -> None:
    before = stats(api.handle, "double")["inference_stats"]["fail"]["count"]
    reply = infer(api.handle, "double", (-1, 2))
    assert reply.status == 500
    assert reply.error == "model 'double' failed: ValueError: negative input"
    assert stats(api.handle, "double")["inference_stats"]["fail"]["count"] == before + 1
    assert_serves(api.handle)


def test_huge_deadlines_are_accepted(api: Api) -> None:
    # Longer than any clock can count: cut to the longest deadline, never an overflow.
    for timeout in (2**64, 10**30):
        assert infer(api.handle, "double", timeout=timeout).status == 200
    for ms in ("1e30", "1e300"):
        assert infer(api.handle, "double", headers={"lanes-timeout-ms": ms}).status == 200
    assert_serves(api.handle)


def test_the_timeout_parameter_wins_over_the_header(serve: Callable[..., Handle]) -> None:
    # As the deadline rule says: the header is read only for a request without the parameter,
    # so a bad header beside a good parameter is not an error.
    h = serve(probe("double", max_batch_size=4))
    reply = infer(h, "double", headers={"lanes-timeout-ms": "soon"}, timeout=5_000_000)
    assert reply.status == 200, reply.body
    assert infer(h, "double", headers={"lanes-timeout-ms": "soon"}).status == 400


def test_not_ready_is_503(serve: Callable[..., Handle]) -> None:
    h = serve(probe("double", max_batch_size=4))
    h.server.native.set_phase("loading")
    try:
        assert http(f"{h.url}/v2/health/live").status == 200
        for path in ("/v2/health/ready", "/v2/models/double/ready"):
            reply = http(h.url + path)
            assert reply.status == 503
            assert "not ready" in reply.error
        reply = infer(h, "double")
        assert reply.status == 503
        assert reply.error == "not ready: loading"
        with client(h) as c:
            assert c.is_server_live()
            assert not c.is_server_ready()
            assert not c.is_model_ready("double")
    finally:
        h.server.native.set_phase("ready")
    assert_serves(h)


# -- queue bound, deadlines, cancellation ---------------------------------------------------------


def test_a_full_queue_is_429_naming_the_model(serve: Callable[..., Handle]) -> None:
    model = probe("tiny", max_batch_size=1, max_enqueued_batches=1)
    h = serve(model)
    model.hold()
    with ThreadPoolExecutor(2) as pool:
        running = pool.submit(infer, h, "tiny", (1, 1))
        assert model.entered.wait(10)
        queued = pool.submit(infer, h, "tiny", (2, 2))
        wait_until(lambda: queued_rows(h, "tiny") == 1)
        refused = infer(h, "tiny", (3, 3))
        assert refused.status == 429
        assert refused.error == (
            "model 'tiny': queue full (1 rows = max_enqueued_batches 1 x max_batch_size 1); "
            "retry later"
        )
        model.release()
        assert running.result(timeout=10).status == 200
        assert queued.result(timeout=10).status == 200
    assert model.ran == [1, 1]  # the refused request never ran
    assert stats(h, "tiny")["lanes"] == {"rejected": 1, "expired": 0, "cancelled": 0}
    assert_serves(h, "tiny")


def test_a_client_batch_larger_than_the_queue_bound_runs_alone(
    serve: Callable[..., Handle],
) -> None:
    model = probe("small", max_batch_size=2, max_enqueued_batches=1)
    h = serve(model)
    reply = infer(h, "small", tuple(range(10)))  # 5 rows: more than the 2-row bound
    assert reply.status == 200
    assert reply.json()["outputs"][0]["data"] == [2 * v for v in range(10)]
    assert model.ran == [5]
    # ... but only into an empty queue: behind a queued request it is refused.
    model.hold()
    with ThreadPoolExecutor(2) as pool:
        running = pool.submit(infer, h, "small", (1, 1))
        assert model.entered.wait(10)
        queued = pool.submit(infer, h, "small", (2, 2))
        wait_until(lambda: queued_rows(h, "small") == 1)
        assert infer(h, "small", tuple(range(10))).status == 429
        model.release()
        assert running.result(timeout=10).status == 200
        assert queued.result(timeout=10).status == 200


def test_expired_requests_never_run(serve: Callable[..., Handle]) -> None:
    slow = probe("slow", max_batch_size=4)
    other = probe("other", max_batch_size=4, timeout_ms=100)  # a default deadline
    h = serve(slow, other)
    slow.hold()

    def by_tritonclient() -> int:
        x = triton.InferInput("x", [1, 2], "FP32")
        x.set_data_from_numpy(np.ones((1, 2), np.float32))
        with client(h) as c, pytest.raises(InferenceServerException) as err:
            c.infer("slow", [x], timeout=100_000)  # KServe "timeout" (µs)
        assert "model 'slow': deadline exceeded" in err.value.message()
        return int(err.value.status())

    with ThreadPoolExecutor(5) as pool:
        running = pool.submit(infer, h, "slow", (1, 1))
        assert slow.entered.wait(10)  # the device is busy with this batch until released
        t0 = time.monotonic()
        expiring = [
            pool.submit(infer, h, "slow", (2, 2), timeout=100_000),
            pool.submit(infer, h, "slow", (3, 3), {"lanes-timeout-ms": "100"}),
            pool.submit(infer, h, "other", (4, 4)),
        ]
        via_triton = pool.submit(by_tritonclient)
        replies = [f.result(timeout=10) for f in expiring]
        assert via_triton.result(timeout=10) == 504
        waited = time.monotonic() - t0
        assert not running.done()  # all answered while the device was still held
        for reply, model in zip(replies, ("slow", "slow", "other"), strict=True):
            assert reply.status == 504
            assert f"model '{model}': deadline exceeded" in reply.error
            assert "not run" in reply.error
        assert waited >= 0.1  # each waited for its deadline, no less
        slow.release()
        assert running.result(timeout=10).status == 200
    assert slow.ran == [1] and other.ran == []  # none of the expired reached the device
    assert stats(h, "slow")["lanes"]["expired"] == 3
    assert stats(h, "other")["lanes"]["expired"] == 1
    assert_serves(h, "slow")
    assert_serves(h, "other")
    assert (slow.ran, other.ran) == ([1, 2], [2])


def test_a_batch_that_started_in_time_completes_past_its_deadline(
    serve: Callable[..., Handle],
) -> None:
    model = probe("double", max_batch_size=4)
    model.sleep_s = 0.3
    h = serve(model)
    reply = infer(h, "double", timeout=100_000)
    assert reply.status == 200
    assert stats(h, "double")["lanes"]["expired"] == 0


def test_a_client_that_goes_away_takes_its_queued_request_out(
    serve: Callable[..., Handle],
) -> None:
    model = probe("slow", max_batch_size=4)
    h = serve(model)
    model.hold()
    cancelled = lambda: stats(h, "slow")["lanes"]["cancelled"]  # noqa: E731

    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(infer, h, "slow", (1, 1))
        assert model.entered.wait(10)

        # A raw socket sends a whole request, and closes once the request is queued.
        payload = body(tensor(data=(2, 2)))
        with socket.create_connection(("127.0.0.1", h.server.port), timeout=10) as sock:
            sock.sendall(
                b"POST /v2/models/slow/infer HTTP/1.1\r\nHost: test\r\n"
                b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                % (len(payload), payload)
            )
            wait_until(lambda: queued_rows(h, "slow") == 1)
        wait_until(lambda: cancelled() == 1)
        assert queued_rows(h, "slow") == 0

        # An aiohttp client whose request task is cancelled while queued.
        async def cancel_one() -> None:
            async with aiohttp.ClientSession() as session:
                task = asyncio.create_task(
                    session.post(f"{h.url}/v2/models/slow/infer", data=body(tensor(data=(3, 3))))
                )
                while queued_rows(h, "slow") != 1:
                    await asyncio.sleep(0.002)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task

        asyncio.run(asyncio.wait_for(cancel_one(), 10))
        wait_until(lambda: cancelled() == 2)
        assert queued_rows(h, "slow") == 0
        model.release()
        assert running.result(timeout=10).status == 200
    assert model.ran == [1]  # the two requests whose clients went away never ran
    assert stats(h, "slow")["lanes"] == {"rejected": 0, "expired": 0, "cancelled": 2}
    assert_serves(h, "slow")
