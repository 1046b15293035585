"""``lanes serve --arbiter``: two servers share simulated GPUs through a real ``lanes arbiter``.

Each server is a real ``lanes serve`` (in this process, its native data plane with its own
arbiter connection); the daemon is a real subprocess. The servers' device timelines
(``GET /v2/trace``, on the wall clock through ``origin_unix_s``) show whether batches of the two
ever overlapped on a device, and the order in which batches reached ``predict`` shows whose job
the daemon granted first.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from tests.arbiter.client_support import Daemon, wait_for
from tests.serving.test_scheduling import BODY, Log, post, sim_model

from lanes.arbiter import Client
from lanes.models import Batching, Model
from lanes.serving import ServeConfig, start_in_thread
from lanes.serving.server import Handle

# the orders follow from the simulated models' timing on this host
pytestmark = pytest.mark.alone


@pytest.fixture
def sock(tmp_path: Path) -> Path:
    return tmp_path / "arbiter.sock"


def arbitrated(sock: Path, devices: str, models: list[Model]) -> Handle:
    config = ServeConfig(
        port=0,
        metrics_port=None,
        devices=devices,
        warmup_batches=0,
        arbiter=f"unix:{sock}",
        arbiter_fallback="fail_closed",
    )
    return start_in_thread(config, models)


def daemon(sock: Path, devices: str, policy: str) -> Iterator[Daemon]:
    d = Daemon(sock, devices, "--policy", policy).start()
    try:
        yield d
    finally:
        d.stop()


def queued_at_daemon(sock: Path) -> int:
    """Acquires queued at the daemon (all its clients), asked on a connection of our own."""
    with Client(sock, service="test") as client:
        return int(client.stats()["queued"])


async def cross_process_order(sock: Path, a: Handle, b: Handle, log: Log) -> None:
    """Hold the device with a long job from A; queue two long (A) and three short (B)."""
    async with aiohttp.ClientSession() as session:
        head = asyncio.ensure_future(post(session, a.url, "long"))
        await asyncio.to_thread(wait_for, lambda: len(log.calls) == 1, 10.0, "the first batch")
        rest = [asyncio.ensure_future(post(session, a.url, "long")) for _ in range(2)]
        await asyncio.to_thread(wait_for, lambda: queued_at_daemon(sock) == 1, 10.0, "A queued")
        rest += [asyncio.ensure_future(post(session, b.url, "short")) for _ in range(3)]
        await asyncio.to_thread(wait_for, lambda: queued_at_daemon(sock) == 2, 10.0, "B queued")
        await asyncio.gather(head, *rest)


@pytest.mark.parametrize("policy", ["sjf:alpha=0,slack=off", "fifo"])
def test_the_daemon_orders_jobs_across_processes(sock: Path, policy: str) -> None:
    log = Log()
    # 400 ms: B's first acquire must reach the daemon while A's first long still runs; with 150
    # ms a loaded CI host (2 cores, 2026-11-27) once let it end first, and A's queued long won.
    long = sim_model("long", 400, log)
    # Two in flight, so A's next batch asks the daemon while its first one runs.
    long.batching = Batching(max_batch_size=1, num_batch_threads=2, max_enqueued_batches=100)
    for _ in daemon(sock, "sim:1", policy):
        with (
            arbitrated(sock, "sim:1", [long]) as a,
            arbitrated(sock, "sim:1", [sim_model("short", 5, log)]) as b,
        ):
            asyncio.run(cross_process_order(sock, a, b, log))
    order = log.order()
    assert sorted(order) == ["long"] * 3 + ["short"] * 3
    if policy == "fifo":  # A's second long asked first, so it goes first
        assert order[:2] == ["long", "long"], order
    else:  # the shorter job first, across processes: all three shorts before A's queued longs
        assert order[:4] == ["long", "short", "short", "short"], order


async def burst(url: str, model: str, n: int) -> None:
    async with aiohttp.ClientSession() as session:
        statuses = []
        for r in asyncio.as_completed(
            [session.post(f"{url}/v2/models/{model}/infer", data=BODY) for _ in range(n)]
        ):
            async with await r as response:
                statuses.append(response.status)
        assert statuses == [200] * n


def test_two_servers_never_overlap_on_a_device(sock: Path) -> None:
    for _ in daemon(sock, "sim:2", "sjf"):
        log = Log()
        with (
            arbitrated(sock, "sim:2", [sim_model("m", 3, log, max_batch=4)]) as a,
            arbitrated(sock, "sim:2", [sim_model("n", 7, log, max_batch=4)]) as b,
        ):

            async def both() -> None:
                await asyncio.gather(burst(a.url, "m", 40), burst(b.url, "n", 40))

            asyncio.run(both())
            jobs = executed(a, "a") + executed(b, "b")
    assert {who for *_, who in jobs} == {"a", "b"}
    for device in (0, 1):
        spans = sorted((start, end) for d, start, end, _ in jobs if d == device)
        for (_, end), (start, _) in itertools.pairwise(spans):
            # The two timelines' origins are each read from the wall clock: 0.2 ms of slack.
            assert start >= end - 200, f"overlap on sim:{device}: {start} < {end} (µs)"
    assert {d for d, *_ in jobs} == {0, 1}  # both devices in use


def executed(h: Handle, who: str) -> list[tuple[int, float, float, str]]:
    """Every batch of ``h``'s timeline: (device, start, end) in µs of Unix time, and ``who``."""
    with urllib.request.urlopen(f"{h.url}/v2/trace?seconds=600", timeout=10) as r:
        trace = json.loads(r.read())
    origin = trace["otherData"]["origin_unix_s"] * 1e6
    return [
        (e["tid"], origin + e["ts"], origin + e["ts"] + e["dur"], who)
        for e in trace["traceEvents"]
        if e["ph"] == "X"
    ]


def test_a_daemon_that_is_down_answers_503_under_fail_closed(sock: Path) -> None:
    log = Log()
    with arbitrated(sock, "sim:1", [sim_model("m", 1, log)]) as h:

        async def one() -> tuple[int, str]:
            async with (
                aiohttp.ClientSession() as session,
                session.post(
                    f"{h.url}/v2/models/m/infer", data=BODY, headers={"lanes-timeout-ms": "200"}
                ) as r,
            ):
                return r.status, await r.text()

        t0 = time.monotonic()
        status, text = asyncio.run(one())
        assert status in (503, 504), text
        assert time.monotonic() - t0 < 5
        assert log.calls == []


def test_the_logs_say_when_the_daemon_is_away_and_when_it_is_back(
    sock: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="lanes.serve")

    def said(words: str) -> list[logging.LogRecord]:
        return [r for r in caplog.records if r.name == "lanes.serve" and words in r.getMessage()]

    with arbitrated(sock, "sim:1", [sim_model("m", 1, Log())]):
        away = f"lanes arbiter at {sock} is not reachable"
        wait_for(lambda: bool(said(away)), 10.0, "the warning that the daemon is away")
        for _ in daemon(sock, "sim:1", "sjf"):
            wait_for(lambda: bool(said(f"lanes arbiter at {sock}: back")), 10.0, "back")
    (warning,) = said(away)  # once, however often the link retried
    assert warning.levelno == logging.WARNING
    assert "fail_closed" in warning.getMessage()
    assert said("back")[0].levelno == logging.INFO
