"""The device timeline (lanes.serving.timeline): Chrome trace-event JSON that validates against
the format's required keys per phase, one slice per device execution, counters that agree with
the slices, the ring bound, ``GET /v2/trace?seconds=`` and its errors, and ``--trace FILE``
written at exit. The export is checked on synthetic jobs (table-driven) and on real servers on
loopback with simulated GPUs.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import pytest

from lanes.errors import LanesError
from lanes.models import Batching, Cost, Model, TensorSpec
from lanes.serving import Handle, ServeConfig, start_in_thread

REQUIRED = {  # phase → keys every event of it must have (Trace Event Format)
    "M": {"name", "ph", "pid", "tid", "args"},
    "X": {"name", "ph", "pid", "tid", "ts", "dur", "args"},
    "C": {"name", "ph", "pid", "ts", "args"},
    "b": {"name", "cat", "ph", "id", "pid", "ts"},
    "e": {"name", "cat", "ph", "id", "pid", "ts"},
}
JOB_ARGS = {
    "model",
    "batch_size",
    "requests",
    "estimated_ms",
    "measured_ms",
    "cpu_ms",
    "run_delay_ms",
    "queue_wait_ms",
}


def check_schema(trace: dict[str, Any]) -> list[dict[str, Any]]:
    """Assert the trace-event format; returns the events."""
    assert set(trace) == {"traceEvents", "displayTimeUnit", "otherData"}
    assert trace["displayTimeUnit"] == "ms"
    events = trace["traceEvents"]
    assert isinstance(events, list)
    for e in events:
        assert e["ph"] in REQUIRED, e
        missing = REQUIRED[e["ph"]] - set(e)
        assert not missing, (e, missing)
        assert isinstance(e["name"], str) and isinstance(e["pid"], int)
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name", "thread_sort_index")
        else:
            assert isinstance(e["ts"], (int, float))
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0
            assert set(e["args"]) - {"failed"} == JOB_ARGS
            assert e["name"] == e["args"]["model"]
        if e["ph"] in "be":
            assert e["cat"] == "request" and isinstance(e["id"], int)
        if e["ph"] == "C":
            assert e["name"].startswith("jobs ")
            assert set(e["args"]) == {"jobs"} and isinstance(e["args"]["jobs"], int)
    return list(events)


def replay(events: list[dict[str, Any]], device: str) -> list[tuple[float, int]]:
    """The job count of ``device`` over time, recomputed from its slices (ends first)."""
    tids = {e["args"]["name"]: e["tid"] for e in events if e["name"] == "thread_name"}
    changes: dict[float, int] = {}
    for e in events:
        if e["ph"] == "X" and e["tid"] == tids[device]:
            changes[e["ts"]] = changes.get(e["ts"], 0) + 1
            end = round(e["ts"] + e["dur"], 3)  # µs with ns digits: undo float rounding
            changes[end] = changes.get(end, 0) - 1
    out, n = [], 0
    for ts in sorted(changes):
        if changes[ts]:
            n += changes[ts]
            out.append((ts, n))
    return out


def counters(events: list[dict[str, Any]], device: str) -> list[tuple[float, int]]:
    return [(e["ts"], e["args"]["jobs"]) for e in events if e["name"] == f"jobs {device}"]


# -- a real server ----------------------------------------------------------------------------


class Echo(Model):
    def predict(self, batch: Any) -> dict[str, np.ndarray]:
        return {"y": np.asarray(batch["x"])}


def slow(name: str, ms: float) -> Echo:
    return Echo(
        name=name,
        inputs=[TensorSpec("x", "FP32", (-1, 1))],
        outputs=[TensorSpec("y", "FP32", (-1, 1))],
        batching=Batching(max_batch_size=1, max_enqueued_batches=16),
        cost=Cost(fixed_ms=ms),
    )


BODY = json.dumps(
    {"inputs": [{"name": "x", "shape": [1, 1], "datatype": "FP32", "data": [1.0]}]}
).encode()


async def burst(url: str, each: int) -> None:
    async with aiohttp.ClientSession() as session:

        async def one(m: str) -> int:
            async with session.post(f"{url}/v2/models/{m}/infer", data=BODY) as r:
                await r.read()
                return r.status

        codes = await asyncio.gather(*(one(m) for m in ("a", "b") for _ in range(each)))
    assert set(codes) == {200}


def get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def start(policy: str, **config: Any) -> Handle:
    settings = {"port": 0, "metrics_port": None, "devices": "sim:1", "policy": policy, **config}
    return start_in_thread(ServeConfig(**settings), [slow("a", 30), slow("b", 30)])


@pytest.mark.parametrize(("policy", "most"), [("independent", 2), ("fifo", 1)])
def test_the_trace_route_shows_every_execution(policy: str, most: int) -> None:
    with start(policy) as h:
        asyncio.run(burst(h.url, 3))
        status, trace = get(f"{h.url}/v2/trace?seconds=60")
        executions = sum(
            get(f"{h.url}/v2/models/{m}/stats")[1]["model_stats"][0]["execution_count"]
            for m in ("a", "b")
        )
    assert status == 200
    events = check_schema(trace)
    slices = [e for e in events if e["ph"] == "X"]
    assert len(slices) == executions == 6
    assert {e["name"] for e in slices} == {"a", "b"}
    assert all(e["args"]["batch_size"] == 1 and e["args"]["requests"] == 1 for e in slices)
    assert all(e["args"]["measured_ms"] >= 30 * 0.9 for e in slices)
    # A simulated device waits out its cost: the call spends little of it on a CPU.
    assert all(0 <= e["args"]["cpu_ms"] < 10 for e in slices)
    names = [e["args"]["name"] for e in events if e["name"] == "thread_name"]
    assert names == ["sim:0"]
    assert [e["args"]["name"] for e in events if e["name"] == "process_name"] == ["lanes serve"]
    jobs = counters(events, "sim:0")
    assert jobs == replay(events, "sim:0")
    assert max(n for _, n in jobs) == most
    assert jobs[-1][1] == 0
    assert trace["otherData"]["policy"] == policy


class Spin(Model):
    """Busy for ``ms`` of its thread's CPU time on every batch."""

    def __init__(self, ms: float, **kw: Any) -> None:
        super().__init__(**kw)
        self.ms = ms

    def predict(self, batch: Any) -> dict[str, np.ndarray]:
        until = time.thread_time() + self.ms / 1e3
        while time.thread_time() < until:
            pass
        return {"y": np.asarray(batch["x"])}


def test_a_slice_carries_the_cpu_time_its_call_ran_on_its_thread() -> None:
    spin = Spin(
        20,
        name="a",
        inputs=[TensorSpec("x", "FP32", (-1, 1))],
        outputs=[TensorSpec("y", "FP32", (-1, 1))],
        batching=Batching(max_batch_size=1, max_enqueued_batches=16),
    )
    config = ServeConfig(port=0, metrics_port=None, devices="cpu:1", policy="fifo")
    with start_in_thread(config, [spin]) as h:
        for _ in range(3):
            req = urllib.request.Request(f"{h.url}/v2/models/a/infer", data=BODY)
            with urllib.request.urlopen(req, timeout=10) as r:
                assert r.status == 200
        status, trace = get(f"{h.url}/v2/trace?seconds=60")
    assert status == 200
    slices = [e for e in check_schema(trace) if e["ph"] == "X" and e["name"] == "a"]
    assert len(slices) >= 3
    for e in slices:
        # The model ran on the executor's thread: at least its 20 ms of CPU, never more
        # than the call's wall time, and its wait for a core fits in what is left.
        args = e["args"]
        assert 20 <= args["cpu_ms"] <= args["measured_ms"] + 0.01, e
        assert 0 <= args["run_delay_ms"] <= args["measured_ms"] - args["cpu_ms"] + 0.01, e


SECONDS_ACCEPTED = ["1", "0.5", "86400", "%202e1%20", ".5"]
SECONDS_REFUSED = [
    "0",
    "-1",
    "abc",
    "nan",
    "inf",
    "86401",
    "1_0",
    "%D9%A1",
    "0x10",
    "1e",
    "99999999",
]


def test_trace_route_errors_and_an_empty_window() -> None:
    with start("fifo") as h:
        for good in SECONDS_ACCEPTED:
            status, answer = get(f"{h.url}/v2/trace?seconds={good}")
            assert status == 200, (good, answer)
        for bad in SECONDS_REFUSED:
            status, answer = get(f"{h.url}/v2/trace?seconds={bad}")
            assert status == 400, (bad, answer)
            shown = urllib.parse.unquote(bad)
            assert answer["error"].startswith(f"seconds = {shown!r}: must be a number"), answer
        status, trace = get(f"{h.url}/v2/trace")
    assert status == 200
    assert [e["ph"] for e in check_schema(trace)] == ["M", "M", "M"]
    assert trace["otherData"]["window_s"] == 10.0


def test_the_trace_file_is_written_at_exit_within_the_ring_bound(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    # A ring of 4 (below --trace-events' floor of 1000: the config object is not checked here).
    with start("fifo", trace=path, trace_events=4) as h:
        asyncio.run(burst(h.url, 3))
        assert not path.exists()
    trace = json.loads(path.read_text())
    events = check_schema(trace)
    assert sum(e["ph"] == "X" for e in events) == 4
    assert (trace["otherData"]["jobs"], trace["otherData"]["dropped"]) == (4, 2)
    assert not [p for p in tmp_path.iterdir() if p.name != "trace.json"]  # no temporary left


def test_a_trace_file_in_a_missing_folder_is_refused_at_start(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "trace.json"
    with pytest.raises(LanesError) as err:
        start("fifo", trace=path)
    assert err.value.message == (
        f"trace = '{path}': folder '{path.parent}' does not exist (see --trace)"
    )


# -- request spans (--trace-requests) ---------------------------------------------------------

STAGES = (  # the stages that add up to a request's total (crates/lanes-server/src/spans.rs)
    "decode_ms",
    "pre_ms",
    "pre_return_ms",
    "scheduled_ms",
    "answer_wake_ms",
    "post_ms",
    "post_return_ms",
)


def requests(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The outer span of each request: its ``b`` event's args, with the matching ``e``'s time."""
    ends = {(e["id"], e["name"]): e["ts"] for e in events if e["ph"] == "e"}
    out = []
    for e in events:
        if e["ph"] == "b" and "args" in e:
            out.append(
                {**e["args"], "id": e["id"], "ts": e["ts"], "end": ends[(e["id"], e["name"])]}
            )
    return out


def test_request_spans_split_each_request_into_its_stages() -> None:
    with start("fifo", trace_requests=100) as h:
        asyncio.run(burst(h.url, 3))
        status, trace = get(f"{h.url}/v2/trace?seconds=60")
    assert status == 200
    events = check_schema(trace)
    spans = requests(events)
    assert len(spans) == 6 == trace["otherData"]["requests"]
    assert (trace["otherData"]["requests_dropped"], trace["otherData"]["requests_capacity"]) == (
        0,
        100,
    )
    assert sorted(s["model"] for s in spans) == ["a", "a", "a", "b", "b", "b"]
    assert len({s["id"] for s in spans}) == 6
    for s in spans:
        # Each model costs 30 ms per batch of one; under fifo on one device the six queue.
        assert s["batch_size"] == 1 and s["run_ms"] >= 30 * 0.9, s
        assert all(s[k] >= 0 for k in STAGES), s
        assert s["handoff_ms"] >= -1e-6, s
        assert (
            abs(
                sum(s[k] for k in STAGES)
                + s.get("pre_wait_ms", 0)
                + s.get("post_wait_ms", 0)
                - s["total_ms"]
            )
            < 1e-6
        ), s
        parts = s["batch_wait_ms"] + s["run_ms"] + s["handoff_ms"]
        assert abs(parts - s["scheduled_ms"]) < 1e-6, s
        assert abs((s["end"] - s["ts"]) / 1e3 - s["total_ms"]) < 1e-3, s
    # One device, first come first served: the last request waited for five batches.
    assert max(s["batch_wait_ms"] for s in spans) >= 5 * 30 * 0.9
    # Each request nests front, scheduled and back, which tile it.
    nested = [e for e in events if e["ph"] == "b" and "args" not in e]
    assert sorted(e["name"] for e in nested) == sorted(["front", "scheduled", "back"] * 6)


def test_request_spans_keep_the_last_n_and_are_off_by_default() -> None:
    with start("fifo", trace_requests=4) as h:
        asyncio.run(burst(h.url, 3))
        _, trace = get(f"{h.url}/v2/trace?seconds=60")
    assert len(requests(check_schema(trace))) == 4
    assert (trace["otherData"]["requests"], trace["otherData"]["requests_dropped"]) == (4, 2)
    with start("fifo") as h:
        asyncio.run(burst(h.url, 1))
        _, trace = get(f"{h.url}/v2/trace?seconds=60")
    assert not [e for e in check_schema(trace) if e["ph"] in "be"]
    assert "requests" not in trace["otherData"]
