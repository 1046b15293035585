"""``lanes serve``'s logs: JSON and text lines, a bounded queue that drops rather than blocks, and
serving that a burst of errors does not slow.

- Formatters: a JSON line is one object with ``ts``, ``level``, ``logger``, ``message`` and the
  extra fields; a text line carries the extras as ``key=value``.
- A stalled writer (a real pipe nobody reads) never blocks the logging thread: records past the
  queue are dropped and counted, and every record is either written or counted.
- A client that goes away before its answer is logged with status 499.
- Under load: ``lanes serve --access-log --log-format json`` (stderr to a file) serves healthy
  requests at 100/s alone (A), beside a burst of healthy requests (C, the control) and beside a
  burst of erroring requests (E: each a 500, a warning and an access line), interleaved A C E
  three times; the median p99 of E stays under a bound derived from A and C measured in the
  same test. Every line of the log file parses.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import re
import signal
import socket
import statistics
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import pytest

from lanes.models import Cost, Model, TensorSpec
from lanes.serving import ServeConfig, start_in_thread
from lanes.serving.logs import JsonFormatter, Logs, TextFormatter
from serve_process import ServeProcess, model_toml, running, write_model

OK_PY = """\
def predict(batch):
    return {"y": batch["x"] * 2}
"""
BAD_PY = """\
def predict(batch):
    if (batch["x"] < 0).any():
        raise ValueError("negative input")
    return {"y": batch["x"] * 2}
"""
HEALTHY = json.dumps(
    {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]}]}
).encode()
FAILING = json.dumps(
    {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [-1, 2]}]}
).encode()
HEALTHY_RATE = 100  # requests/s
BURST_RATE = 100  # erroring requests/s during a burst
WINDOW_S = 2.0
REPEATS = 5  # windows of each kind; the bound is on their median, so two stalls cannot decide it


def record(name: str, level: int, msg: str, **extra: object) -> logging.LogRecord:
    r = logging.LogRecord(name, level, __file__, 1, msg, None, None)
    r.__dict__.update(extra)
    return r


def test_json_and_text_lines_carry_the_extra_fields():
    r = record("lanes.access", logging.INFO, "GET /v2 200", status=200, model=None)
    line = json.loads(JsonFormatter().format(r))
    assert set(line) == {"ts", "level", "logger", "message", "status", "model"}
    assert (line["level"], line["logger"], line["message"]) == (
        "info",
        "lanes.access",
        "GET /v2 200",
    )
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", line["ts"])
    text = TextFormatter().format(r)
    assert re.fullmatch(r"\S+Z INFO lanes\.access: GET /v2 200 status=200 model=None", text)


def test_a_stalled_writer_drops_and_counts_records_instead_of_blocking():
    read_fd, write_fd = os.pipe()  # nobody reads until the end: the writer blocks on a full pipe
    stream = io.TextIOWrapper(os.fdopen(write_fd, "wb"), line_buffering=True)
    logs = Logs("json", "info", stream=stream, queue_records=100)
    log = logging.getLogger("lanes.serve")
    n = 5000  # ~110 bytes each: several times the 64 KiB pipe plus the queue
    t0 = time.monotonic()
    for i in range(n):
        log.info("record %d %s", i, "x" * 50)
    elapsed = time.monotonic() - t0
    assert logs.dropped > 0
    assert elapsed < 2.0  # never waited on the writer (a blocking logger would hang here)

    lines: list[str] = []
    reader = threading.Thread(
        target=lambda: lines.extend(os.fdopen(read_fd, encoding="utf-8")), daemon=True
    )
    reader.start()
    dropped = logs.close()
    stream.close()
    reader.join(timeout=10)
    parsed = [json.loads(line) for line in lines]
    records = [p for p in parsed if p["message"].startswith("record ")]
    assert len(records) + dropped == n  # every record written or counted
    assert parsed[-1]["message"] == f"dropped {dropped} log records in all"
    assert parsed[-1]["dropped_total"] == dropped


# -- under load -----------------------------------------------------------------------------------


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServeProcess]:
    repo = tmp_path / "repo"
    for name, source, max_batch in (("ok", OK_PY, 8), ("bad", BAD_PY, 8)):
        write_model(repo, name, source, model_toml(max_batch))
    args = ["--models", str(repo), "--devices", "cpu", "--port", "0", "--metrics-port", "off"]
    args += ["--policy", "fifo", "--access-log", "--log-format", "json"]
    with running(args, tmp_path / "serve.log") as p:
        yield p


async def paced(url: str, body: bytes, rate: float, duration: float) -> list[tuple[int, float]]:
    """Open loop: one POST every 1/rate s for ``duration`` s; each one's status and latency (ms)
    from its intended send time."""
    loop = asyncio.get_running_loop()
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def one(at: float) -> tuple[int, float]:
            await asyncio.sleep(max(0.0, at - loop.time()))
            async with session.post(url, data=body) as r:
                await r.read()
            return r.status, (loop.time() - at) * 1e3

        start = loop.time() + 0.05
        n = int(rate * duration)
        return list(await asyncio.gather(*(one(start + i / rate) for i in range(n))))


def healthy_latencies(url: str) -> list[float]:
    answers = asyncio.run(paced(url, HEALTHY, HEALTHY_RATE, WINDOW_S))
    assert {status for status, _ in answers} == {200}
    return [ms for _, ms in answers]


def burst_thread(url: str, body: bytes, statuses: list[int]) -> threading.Thread:
    """A burst of requests from its own thread and event loop."""

    def run() -> None:
        answers = asyncio.run(paced(url, body, BURST_RATE, WINDOW_S + 0.2))
        statuses.extend(status for status, _ in answers)

    return threading.Thread(target=run, daemon=True)


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


@pytest.mark.alone
def test_an_error_burst_does_not_raise_the_p99_of_healthy_requests(server: ServeProcess):
    healthy = f"{server.url}/v2/models/ok/infer"
    failing = f"{server.url}/v2/models/bad/infer"
    # p99 of each 2 s window of healthy requests, by what ran beside them:
    # A alone; C a burst of healthy requests to the same model; E a burst of erroring requests
    # (a 500, a warning and an access line each). Interleaved A C E, REPEATS times.
    windows: dict[str, list[float]] = {"A": [], "C": [], "E": []}
    statuses: dict[bytes, list[int]] = {HEALTHY: [], FAILING: []}
    for _ in range(REPEATS):
        windows["A"].append(p99(healthy_latencies(healthy)))
        for key, body, url in (("C", HEALTHY, healthy), ("E", FAILING, failing)):
            burst = burst_thread(url, body, statuses[body])
            burst.start()
            windows[key].append(p99(healthy_latencies(healthy)))
            burst.join(timeout=30)
    assert set(statuses[HEALTHY]) == {200} and set(statuses[FAILING]) == {500}
    a, c, e = (statistics.median(windows[k]) for k in "ACE")
    # The bound, on medians of the windows' p99 (two stalls of this shared machine cannot decide
    # it): the control burst C carries the same request rate and CPU as the error burst E, so
    # what E adds over C is the errors' handling and logging. 2x the larger baseline plus 25 ms
    # absorbs the noise of a shared 2-core machine; a logger that made requests wait on the
    # writer would stall far past it.
    bound = 2 * max(a, c) + 25
    assert e < bound, f"median p99 (ms) of windows: {windows}"

    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=30) == 0
    lines = [
        json.loads(line) for line in server.log.read_text().splitlines() if line.startswith("{")
    ]
    access = [x for x in lines if x["logger"] == "lanes.access"]
    ok = [x for x in access if x["path"] == "/v2/models/ok/infer"]
    dropped = sum(x.get("dropped_total", 0) for x in lines if "in all" in x["message"])
    assert {
        "ts",
        "level",
        "logger",
        "message",
        "method",
        "path",
        "status",
        "duration_ms",
        "model",
    } <= set(ok[0])
    assert (ok[0]["method"], ok[0]["status"], ok[0]["model"]) == ("POST", 200, "ok")
    warnings = [x for x in lines if x["level"] == "warning" and x.get("model") == "bad"]
    assert warnings and warnings[0]["message"].endswith("ValueError: negative input")
    sent = REPEATS * 3 * int(HEALTHY_RATE * WINDOW_S) + len(statuses[HEALTHY])
    assert len(ok) == sent or dropped > 0  # every line written, or the drop counted
    print(f"median p99 A {a:.1f} C {c:.1f} E {e:.1f} ms (bound {bound:.1f})")


# -- a client that goes away ------------------------------------------------------------------


class Slow(Model):
    def predict(self, batch: Any) -> dict[str, np.ndarray]:
        return {"y": np.asarray(batch["x"])}


def test_a_client_that_goes_away_is_logged_with_499(caplog: pytest.LogCaptureFixture) -> None:
    """The request reaches the server, the client closes its socket while the batch runs (a
    simulated GPU holds it 300 ms): the access line says 499, and the server answers others."""
    slow = Slow(
        name="slow",
        inputs=[TensorSpec("x", "FP32", (-1, 2))],
        outputs=[TensorSpec("y", "FP32", (-1, 2))],
        cost=Cost(fixed_ms=300),
    )
    config = ServeConfig(
        port=0, metrics_port=None, devices="sim:1", access_log=True, warmup_batches=0
    )
    caplog.set_level(logging.INFO, logger="lanes.access")
    with start_in_thread(config, [slow]) as h:
        head = (
            f"POST /v2/models/slow/infer HTTP/1.1\r\nHost: x\r\n"
            f"Content-Length: {len(HEALTHY)}\r\n\r\n"
        ).encode()
        with socket.create_connection(("127.0.0.1", h.server.port)) as s:
            s.sendall(head + HEALTHY)
            time.sleep(0.05)  # received and queued; the batch holds the device
        with urllib.request.urlopen(
            urllib.request.Request(f"{h.url}/v2/models/slow/infer", data=HEALTHY), timeout=10
        ) as r:
            assert r.status == 200
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not any(
            getattr(rec, "status", None) == 499 for rec in caplog.records
        ):
            time.sleep(0.05)
    lines = [(rec.getMessage(), getattr(rec, "status", None)) for rec in caplog.records]
    gone = [m for m, status in lines if status == 499]
    assert gone == ["POST /v2/models/slow/infer 499"], lines
    assert ("POST /v2/models/slow/infer 200", 200) in lines
