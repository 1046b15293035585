"""lanes.arbiter.Client against a real ``lanes arbiter`` daemon: grants from threads and asyncio,
no overlap on a device, rejects as stable error codes, cancellation withdraws, and both
fallbacks across a daemon stop and restart. Plus the pure pieces: the codec's refusals, the
backoff's bounds and the local ``limit:1`` devices.
"""

from __future__ import annotations

import asyncio
import random
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from client_support import Daemon, wait_for

from lanes.arbiter import Client, protocol
from lanes.arbiter.connection import backoff_delay
from lanes.arbiter.fallback import LocalDevices
from lanes.errors import LanesError


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    """A daemon of this test's own (the test may stop and restart it)."""
    d = Daemon(tmp_path / "arb.sock", "sim:2").start()
    yield d
    d.stop()


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """One daemon for the tests that leave it running (a start costs seconds here)."""
    d = Daemon(tmp_path_factory.mktemp("arb") / "arb.sock", "sim:2").start()
    yield d
    d.stop()


@pytest.fixture
def client(shared: Daemon) -> Iterator[Client]:
    with Client(shared.path, service="tests", backoff_s=(0.01, 0.1)) as c:
        assert c.wait_connected(5)
        yield c


def busy(client: Client) -> int:
    """Grants held now, from the daemon's own STATS."""
    return int(client.stats()["running"])


def test_a_slot_holds_a_device_until_the_block_ends(client: Client) -> None:
    assert client.devices == ("sim:0", "sim:1")
    with client.slot("line_rnn_zh", batch=8) as device:
        assert device in client.devices
        assert busy(client) == 1
    wait_for(lambda: busy(client) == 0, what="the release")
    with pytest.raises(ValueError), client.slot("m", devices=["sim:1"]) as device:
        assert device == "sim:1"
        raise ValueError("a failed block still releases")
    wait_for(lambda: busy(client) == 0, what="the release after a failure")


def test_threads_never_overlap_on_a_device(client: Client) -> None:
    inside = {"sim:0": 0, "sim:1": 0}
    most = {"sim:0": 0, "sim:1": 0}
    lock = threading.Lock()

    def work() -> None:
        for _ in range(30):
            with client.slot("m", batch=1) as device:
                with lock:
                    inside[device] += 1
                    most[device] = max(most[device], inside[device])
                with lock:
                    inside[device] -= 1

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert most == {"sim:0": 1, "sim:1": 1}


def test_asyncio_slots_and_cancellation(client: Client) -> None:
    async def main() -> None:
        async with client.slot("a", devices=[0]) as first:
            assert first == "sim:0"
            # The only eligible device is held: this one queues, then is cancelled.
            waiter = asyncio.ensure_future(_hold(client, "sim:0"))
            await asyncio.sleep(0)
            wait_for(lambda: client.stats()["devices"][0]["queued"] == 1, what="the queued job")
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
            wait_for(lambda: client.stats()["devices"][0]["queued"] == 0, what="the withdrawal")
        # Nothing leaked: the device is free for the next slot at once.
        async with client.slot("a", devices=["sim:0"], timeout_s=2) as again:
            assert again == "sim:0"
        results = await asyncio.gather(*(_hold(client, None) for _ in range(20)))
        assert set(results) <= {"sim:0", "sim:1"}

    asyncio.run(main())


async def _hold(client: Client, device: str | None) -> str:
    async with client.slot("a", devices=None if device is None else [device]) as got:
        await asyncio.sleep(0.001)
        return got


def test_rejects_raise_stable_codes(client: Client) -> None:
    with pytest.raises(LanesError) as e, client.slot("m", devices=[7]):
        pass
    assert e.value.code == "arbiter_no_such_device"
    with pytest.raises(LanesError) as e, client.slot("m", devices=["cuda:9"]):
        pass
    assert e.value.code == "arbiter_no_such_device"
    assert "cuda:9" in e.value.message
    with client.slot("m", devices=[0]), pytest.raises(LanesError) as e:  # noqa: SIM117
        with client.slot("m", devices=[0], timeout_s=0.1):
            pass
    assert e.value.code == "arbiter_deadline"
    for bad in ({"batch": 0}, {"cost_ms": -1.0}, {"timeout_s": 0.0}):
        with pytest.raises(LanesError) as e:
            client.slot("m", **bad)  # type: ignore[arg-type]
        assert e.value.code == "bad_argument"


def test_fail_open_runs_locally_while_the_daemon_is_down(daemon: Daemon) -> None:
    with Client(daemon.path, fallback="fail_open", backoff_s=(0.01, 0.05)) as c:
        assert c.wait_connected(5)
        daemon.stop()
        wait_for(lambda: not c.connected, what="the client to see the daemon go")
        slot = c.slot("m")
        with slot as device:
            assert slot.held is not None and slot.held.fallback
            assert device in ("sim:0", "sim:1")
            # limit:1 per device in this process: a second slot for the same device waits.
            with pytest.raises(LanesError) as e, c.slot("m", devices=[device], timeout_s=0.05):
                pass
            assert e.value.code == "arbiter_deadline"
        daemon.start()
        assert c.wait_connected(5)
        slot = c.slot("m")
        with slot:
            assert slot.held is not None and not slot.held.fallback
            assert busy(c) == 1


def test_fail_closed_waits_for_the_daemon_then_raises(daemon: Daemon) -> None:
    with Client(daemon.path, fallback="fail_closed", backoff_s=(0.01, 0.05)) as c:
        assert c.wait_connected(5)
        daemon.stop()
        wait_for(lambda: not c.connected, what="the client to see the daemon go")
        with pytest.raises(LanesError) as e, c.slot("m", timeout_s=0.1):
            pass
        assert e.value.code == "arbiter_unavailable"
        got: list[str] = []
        waiter = threading.Thread(target=lambda: got.append(_enter(c)))
        waiter.start()
        daemon.start()
        waiter.join(timeout=10)
        assert got and got[0] in ("sim:0", "sim:1")


def _enter(c: Client) -> str:
    slot = c.slot("m", timeout_s=10)
    with slot as device:
        assert slot.held is not None and not slot.held.fallback
        return device


def test_a_client_that_never_reached_the_daemon(tmp_path: Path) -> None:
    missing = tmp_path / "none.sock"
    with Client(missing, devices=["cuda:0"]) as c:
        assert not c.connected
        with c.slot("m") as device:
            assert device == "cuda:0"
    with Client(missing) as c, pytest.raises(LanesError) as e, c.slot("m"):
        pass
    assert e.value.code == "arbiter_unavailable"
    with pytest.raises(LanesError) as e:
        Client(missing, fallback="fail_sometimes")
    assert e.value.code == "bad_argument"


@pytest.mark.parametrize(
    ("payload", "needle"),
    [
        (b"", "empty frame"),
        (b"\x82" + struct.pack(">QH", 1, 0), "cut short"),
        (b"\x84" + struct.pack(">Q", 1) + b"x", "1 trailing bytes"),
        (b"\x83" + struct.pack(">QHH", 1, 1, 2) + b"\xff\xfe", "utf-8"),
        (b"\x81" + struct.pack(">HQHH", 1, 1, 1, 300) + b"x" * 300, "at most 255"),
        (b"\x85" + struct.pack(">I", 2) + b"[]", "not an object"),
        (b"\x42", "unknown type 0x42"),
    ],
)
def test_the_codec_refuses_malformed_frames(payload: bytes, needle: str) -> None:
    with pytest.raises(LanesError) as e:
        protocol.decode(payload)
    assert e.value.code == "arbiter_protocol"
    assert needle in e.value.message


def test_encoders_follow_the_layout() -> None:
    frame = protocol.acquire(5, "m", 8, 1000, 2000, (1, 3))
    assert struct.unpack(">I", frame[:4])[0] == len(frame) - 4
    body = frame[4:]
    assert body == b"\x02" + struct.pack(">QH", 5, 1) + b"m" + struct.pack(
        ">IQQHHH", 8, 1000, 2000, 2, 1, 3
    )
    assert protocol.release(5, 7)[4:] == b"\x03" + struct.pack(">QQ", 5, 7)
    with pytest.raises(LanesError):
        protocol.hello(1, "x" * 256)


def test_backoff_doubles_to_its_cap_with_jitter() -> None:
    rng = random.Random(1)
    for attempt, lo, hi in [(0, 0.05, 0.1), (1, 0.1, 0.2), (3, 0.4, 0.8), (10, 1.0, 2.0)]:
        for _ in range(50):
            assert lo <= backoff_delay(attempt, 0.1, 2.0, rng) <= hi


def test_local_devices_are_limit_one_first_come_first_served() -> None:
    local = LocalDevices()
    a = local.acquire(["d0"])
    b = local.acquire(["d0", "d1"])
    assert (a.result(0), b.result(0)) == ("d0", "d1")
    c = local.acquire(["d0"])
    d = local.acquire(["d0", "d1"])
    assert not c.done() and not d.done()
    local.release("d1")
    assert d.result(0) == "d1" and not c.done()
    local.abandon(c)
    local.release("d0")
    assert local.busy() == {"d1"}
