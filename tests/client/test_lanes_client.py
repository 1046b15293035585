"""``lanes.client`` against real ``lanes serve`` processes on loopback (``sim:1`` devices):
batching, balancing, health, retries and deadlines, through the sync and asyncio paths."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from fleet_members import batch_sizes, launch, stats, wait_until

from lanes.client import AsyncClient, Client, ClientConfig, ClientError
from lanes.probe import Event
from serve_process import ServeProcess, stop


@pytest.fixture
def member(tmp_path: Path) -> Iterator[ServeProcess]:
    p = launch(tmp_path, "a", cost_ms=5, max_batch=8)
    yield p
    stop(p.proc)


def row(i: int) -> dict[str, np.ndarray]:
    return {"x": np.array([[i, -i]], dtype=np.float32)}


def test_threads_form_full_batches(member: ServeProcess) -> None:
    config = ClientConfig(members=[member.url], batch_timeout_ms=2000)
    with Client(config) as client, ThreadPoolExecutor(32) as pool:
        outs = list(pool.map(lambda i: client.infer("double", row(i)), range(32)))
        (state,) = client.members()
    for i, out in enumerate(outs):  # each caller got its own rows back
        np.testing.assert_array_equal(out["y"], [[2 * i, -2 * i]])
    assert batch_sizes(member) == {8: 4}
    assert (state.batches, state.rows, state.up) == (4, 32, True)


def test_asyncio_forms_full_batches_and_sends_big_calls_alone(member: ServeProcess) -> None:
    async def main() -> list[dict[str, np.ndarray]]:
        config = ClientConfig(members=[member.url], batch_timeout_ms=2000)
        async with AsyncClient(config) as client:
            calls = [client.infer("double", row(i)) for i in range(16)]
            big = {"x": np.ones((10, 2), dtype=np.float32)}  # over max_batch_size: alone
            return await asyncio.gather(*calls, client.infer("double", big))

    outs = asyncio.run(main())
    for i, out in enumerate(outs[:16]):
        np.testing.assert_array_equal(out["y"], [[2 * i, -2 * i]])
    np.testing.assert_array_equal(outs[16]["y"], np.full((10, 2), 2.0))
    assert batch_sizes(member) == {8: 2, 10: 1}


def test_balancing_sends_more_to_the_cheaper_member(tmp_path: Path) -> None:
    fast = launch(tmp_path, "fast", cost_ms=4, max_batch=4)
    slow = launch(tmp_path, "slow", cost_ms=40, max_batch=4)
    try:

        async def main() -> None:
            config = ClientConfig(members=[fast.url, slow.url], batch_timeout_ms=0)
            async with AsyncClient(config) as client:
                x = {"x": np.zeros((4, 2), dtype=np.float32)}
                await asyncio.gather(*(client.infer("double", x) for _ in range(45)))

        asyncio.run(main())
        fast_rows, slow_rows = stats(fast)["inference_count"], stats(slow)["inference_count"]
    finally:
        stop(fast.proc)
        stop(slow.proc)
    assert fast_rows + slow_rows == 180
    # least outstanding work: the 40 ms member gets about 1 batch per 10 of the 4 ms one
    assert slow_rows >= 4 and fast_rows >= 4 * slow_rows, (fast_rows, slow_rows)


def test_a_killed_member_is_dropped_retried_around_and_readded(tmp_path: Path) -> None:
    a = launch(tmp_path, "a", cost_ms=300, max_batch=1)
    b = launch(tmp_path, "b", cost_ms=300, max_batch=1)
    events: list[Event] = []
    config = ClientConfig(
        members=[a.url, b.url],
        batch_timeout_ms=0,
        probe_interval_s=0.05,
        stats_refresh_s=3600,  # both keep the estimates read first (equal priors): ties decide
    )
    client = Client(config, on_event=events.append)
    try:
        client.infer("double", row(1))  # a (ties go to the first), then b: both known
        client.infer("double", row(2))
        assert stats(a)["inference_count"] == 1 and stats(b)["inference_count"] == 1

        # A batch on a's device when a dies: it may have run, so it is not retried.
        errors: list[ClientError] = []
        on_a = threading.Thread(target=lambda: _expect_error(client, errors))
        on_a.start()
        wait_until(lambda: stats(a)["inference_stats"]["compute_input"]["count"] == 2)
        stop(a.proc)
        on_a.join(10)
        (err,) = errors
        assert (err.code, err.sent, err.member, err.attempts) == (
            "connection_lost",
            True,
            a.url,
            1,
        )
        assert stats(b)["inference_count"] == 1  # not retried on b
        assert {s.url: s.up for s in client.members()} == {a.url: False, b.url: True}
        assert (events[0].target, events[0].state) == (a.url, "down")

        # a comes back on its port: the half-open probe re-adds it.
        a = launch(tmp_path, "a", cost_ms=300, max_batch=1, port=a.port)
        wait_until(lambda: all(s.up for s in client.members()))
        assert (events[-1].target, events[-1].state, events[-1].previous) == (a.url, "up", "down")

        # a dies while idle: calls balanced to it are refused before sending, so retried on b.
        stop(a.proc)
        before = stats(b)["inference_count"]
        with ThreadPoolExecutor(4) as pool:
            outs = list(pool.map(lambda i: client.infer("double", row(i)), range(4)))
        for i, out in enumerate(outs):
            np.testing.assert_array_equal(out["y"], [[2 * i, -2 * i]])
        assert stats(b)["inference_count"] == before + 4
        assert {s.url: s.up for s in client.members()} == {a.url: False, b.url: True}
    finally:
        client.close()
        stop(a.proc)
        stop(b.proc)


def _expect_error(client: Client, errors: list[ClientError]) -> None:
    try:
        client.infer("double", row(3))
    except ClientError as err:
        errors.append(err)


def test_deadlines_reach_the_server(tmp_path: Path) -> None:
    p = launch(tmp_path, "slow", cost_ms=400, max_batch=1)
    try:
        with Client(members=[p.url]) as client:
            client.metadata("double")
            with ThreadPoolExecutor(1) as pool:
                first = pool.submit(client.infer, "double", row(1))  # holds the device
                wait_until(lambda: stats(p)["inference_stats"]["compute_input"]["count"] == 1)
                with pytest.raises(ClientError) as queued:
                    client.infer("double", row(2), timeout_s=0.05)
                first.result()
            with pytest.raises(ClientError) as expired:
                client.infer("double", row(3), timeout_s=0)
        final = stats(p)
    finally:
        stop(p.proc)
    # the server dropped it from its queue at the deadline the client sent (504)
    assert (queued.value.code, queued.value.status) == ("deadline_exceeded", 504)
    assert "in the queue; not run" in queued.value.message
    # expired before sending: nothing was sent
    assert (expired.value.code, expired.value.sent, expired.value.status) == (
        "deadline_exceeded",
        False,
        None,
    )
    assert final["lanes"]["expired"] == 1 and final["inference_count"] == 1


def test_bad_input_and_no_members_are_clear_errors(member: ServeProcess) -> None:
    with Client(members=[member.url]) as client:
        with pytest.raises(ClientError) as unknown:
            client.infer("nope", row(1))
        with pytest.raises(ClientError) as name:
            client.infer("double", {"z": np.zeros((1, 2), dtype=np.float32)})
        with pytest.raises(ClientError) as shape:
            client.infer("double", {"x": np.zeros((1, 3), dtype=np.float32)})
        with pytest.raises(ClientError) as dtype:
            client.infer("double", {"x": np.zeros((1, 2), dtype=np.complex64)})
    assert (unknown.value.code, unknown.value.status) == ("unknown_model", 404)
    assert "unknown model 'nope'" in unknown.value.message
    assert name.value.code == "bad_input" and "has no input 'z'" in name.value.message
    assert (shape.value.code, shape.value.status) == ("bad_input", 400)
    assert "shape" in shape.value.message
    assert dtype.value.code == "bad_input" and "complex64 has no KServe datatype" in str(
        dtype.value
    )

    with Client(members=[]) as client, pytest.raises(ClientError) as none:
        client.infer("double", row(1))
    assert none.value.code == "no_members" and "listed none" in none.value.message

    with Client(members=["http://127.0.0.1:1"]) as client, pytest.raises(ClientError) as down:
        client.infer("double", row(1))
    assert down.value.code == "unavailable" and "cannot connect" in down.value.message


def test_members_from_an_async_callable(member: ServeProcess) -> None:
    async def listing() -> list[str]:
        return [member.url.removeprefix("http://")]

    with Client(members=listing) as client:
        np.testing.assert_array_equal(client.infer("double", row(4))["y"], [[8, -8]])
        assert [s.url for s in client.members()] == [member.url]


def test_a_prober_event_drops_a_member_until_it_is_ready(member: ServeProcess) -> None:
    events: list[Event] = []
    config = ClientConfig(members=[member.url], probe_interval_s=0.05)
    with Client(config, on_event=events.append) as client:
        client.infer("double", row(1))
        target = f"{member.host}:{member.port}"
        client.observe(Event(target, None, "down", "up", 0.0, 7))
        wait_until(lambda: len(events) == 2)  # down, then up by its readiness probe
        assert [(e.target, e.state) for e in events] == [(member.url, "down"), (member.url, "up")]
        np.testing.assert_array_equal(client.infer("double", row(5))["y"], [[10, -10]])


def test_a_call_due_before_its_batch_fails_at_its_own_deadline(tmp_path: Path) -> None:
    p = launch(tmp_path, "slow", cost_ms=300, max_batch=2)
    try:

        async def main() -> tuple[BaseException | dict[str, np.ndarray], ...]:
            config = ClientConfig(members=[p.url], batch_timeout_ms=2000)
            async with AsyncClient(config) as client:
                await client.metadata("double")
                return tuple(
                    await asyncio.gather(
                        client.infer("double", row(1), timeout_s=0.1),
                        client.infer("double", row(2)),  # no deadline: the batch has none
                        return_exceptions=True,
                    )
                )

        early, late = asyncio.run(main())
        sizes = batch_sizes(p)
    finally:
        stop(p.proc)
    assert isinstance(early, ClientError) and isinstance(late, dict)
    assert (early.code, early.sent) == ("deadline_exceeded", True)
    assert "while its batch was out (the batch has no deadline)" in early.message
    np.testing.assert_array_equal(late["y"], [[4, -4]])
    assert sizes == {2: 1}  # one batch of both: the server ran it, the late caller got its rows
