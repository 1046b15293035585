"""One client connection to the arbiter daemon, kept up by a reader thread.

Design: a :class:`Connection` owns one Unix stream socket and one daemon thread. The thread
opens the socket (HELLO → WELCOME), then reads frames and routes each reply to its waiter:
GRANT and REJECT by acquire id to a ``concurrent.futures.Future``, STATS_REPLY to the oldest
STATS waiter (replies come in order). Any thread, and any asyncio event loop (through
``asyncio.wrap_future``), waits on those futures; writes go straight to the socket under a
lock (frames are tens of bytes, so a write never waits on a Unix socket in practice).

When the daemon goes away (EOF, a reset, an ERROR frame, a malformed reply) every waiter fails
with :class:`Down`, the state becomes *down* and the thread reconnects with capped exponential
backoff and jitter: attempt ``n`` (from 0) waits ``d/2 + uniform(0, d/2)`` with
``d = min(cap, base * 2**n)`` ("equal jitter"), so restarting daemons are not stormed by their
clients in step. A successful handshake resets ``n`` and starts a new *generation*: grants of
an older generation died with their connection (the daemon released them), so releasing one
sends nothing.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import random
import socket
import struct
import threading
from collections import deque
from concurrent.futures import Future, InvalidStateError
from typing import Any

from lanes.arbiter import protocol as p
from lanes.errors import LanesError

log = logging.getLogger("lanes.arbiter")

HANDSHAKE_TIMEOUT_S = 2.0
"""Longest wait for WELCOME after HELLO."""


class Down(Exception):
    """The daemon is not reachable now (raised to waiters; the connection retries)."""


def backoff_delay(attempt: int, base_s: float, cap_s: float, rng: random.Random) -> float:
    """Equal-jitter exponential backoff: ``d/2 + uniform(0, d/2)``, ``d = min(cap, base*2**n)``."""
    d = min(cap_s, base_s * 2.0 ** min(attempt, 30))
    return d / 2 + rng.uniform(0, d / 2)


def _settle(fut: Future[Any], value: Any = None, error: BaseException | None = None) -> None:
    """Completes ``fut`` unless a waiter already gave it up."""
    with contextlib.suppress(InvalidStateError):
        if error is None:
            fut.set_result(value)
        else:
            fut.set_exception(error)


class Connection:
    """The socket, its reader thread and the waiters; see the module docs."""

    def __init__(self, path: str, service: str, *, backoff_s: tuple[float, float]) -> None:
        self.path = path
        self.service = service
        self._backoff = backoff_s
        self._rng = random.Random()
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._welcome: p.Welcome | None = None
        self.last_devices: tuple[str, ...] = ()
        """The device names of the last WELCOME (kept while down, for fail_open)."""
        self._generation = 0
        self._ids = itertools.count(1)
        self._pending: dict[int, Future[p.Grant | p.Reject]] = {}
        self._stats: deque[Future[dict[str, Any]]] = deque()
        self._revoked: set[tuple[int, int]] = set()
        self._up: Future[p.Welcome] = Future()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lanes-arbiter-client", daemon=True)
        self._reader: Any = None
        with contextlib.suppress(OSError, LanesError):
            self._open()  # one try now, so a client made while the daemon runs starts up
        self._thread.start()

    # -- state seen by the client ------------------------------------------------------------

    @property
    def welcome(self) -> p.Welcome | None:
        """The current session's WELCOME, or None while down."""
        return self._welcome

    def when_up(self) -> Future[p.Welcome]:
        """A future resolved (with WELCOME) once the connection is up; already done when up."""
        with self._lock:
            return self._up

    def is_revoked(self, generation: int, id: int) -> bool:
        """True when the daemon revoked grant ``id`` of ``generation``."""
        return (generation, id) in self._revoked

    # -- requests ------------------------------------------------------------------------------

    def acquire(
        self,
        model: str,
        batch: int,
        cost_ns: int,
        timeout_ns: int,
        devices: tuple[int, ...],
    ) -> tuple[int, int, Future[p.Grant | p.Reject]]:
        """Sends ACQUIRE; returns (id, generation, reply future). Raises :class:`Down`."""
        fut: Future[p.Grant | p.Reject] = Future()
        with self._lock:
            if self._sock is None:
                raise Down(self.path)
            id = next(self._ids)
            generation = self._generation
            self._pending[id] = fut
        frame = p.acquire(id, model, batch, cost_ns, timeout_ns, devices)
        if not self._send(generation, frame):
            with self._lock:
                self._pending.pop(id, None)
            raise Down(self.path)
        return id, generation, fut

    def abandon(self, id: int, generation: int, fut: Future[p.Grant | p.Reject]) -> None:
        """Gives up acquire ``id``: CANCEL while queued, RELEASE if it was granted meanwhile."""
        with self._lock:
            queued = self._pending.pop(id, None) is not None
        if queued:
            self._send(generation, p.cancel(id))  # a GRANT that crossed it is released on receipt
        elif (
            fut.done()
            and not fut.cancelled()
            and fut.exception() is None
            and isinstance(fut.result(), p.Grant)
        ):
            self.release(id, generation, 0)

    def release(self, id: int, generation: int, run_ns: int) -> None:
        """Sends RELEASE for a grant of ``generation`` (nothing if that connection is gone)."""
        self._revoked.discard((generation, id))
        self._send(generation, p.release(id, run_ns))

    def stats(self) -> Future[dict[str, Any]]:
        """Sends STATS; the future gets the daemon's JSON. Raises :class:`Down`."""
        fut: Future[dict[str, Any]] = Future()
        with self._lock:
            if self._sock is None:
                raise Down(self.path)
            generation = self._generation
            self._stats.append(fut)
        if not self._send(generation, p.stats()):
            raise Down(self.path)
        return fut

    def close(self) -> None:
        """Closes the socket and ends the reader thread."""
        self._stop.set()
        with self._lock:
            sock = self._sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def _send(self, generation: int, frame: bytes) -> bool:
        """Writes ``frame`` if ``generation`` is still the live connection; False if not."""
        with self._send_lock:
            sock = self._sock
            if sock is None or generation != self._generation:
                return False
            try:
                sock.sendall(frame)
            except OSError:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)  # the reader sees it and goes down
                return False
        return True

    # -- the reader thread ---------------------------------------------------------------------

    def _open(self) -> None:
        """Connects and shakes hands; on success the connection is up."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(HANDSHAKE_TIMEOUT_S)
            sock.connect(self.path)
            sock.sendall(p.hello(os.getpid(), self.service))
            reader = sock.makefile("rb", buffering=65536)
            welcome = _read(reader)
            if isinstance(welcome, p.Error):
                name = p.ERROR_NAMES.get(welcome.code, str(welcome.code))
                raise LanesError(p.ARBITER_PROTOCOL, f"arbiter refused HELLO: {name}: {welcome}")
            if not isinstance(welcome, p.Welcome) or welcome.version != p.VERSION:
                raise LanesError(p.ARBITER_PROTOCOL, f"expected WELCOME v1, got {welcome!r}")
            sock.settimeout(None)
        except BaseException:
            sock.close()
            raise
        with self._lock, self._send_lock:
            self._sock = sock
            self._reader = reader
            self._welcome = welcome
            self.last_devices = welcome.devices
            self._generation += 1
            up = self._up
        log.info("arbiter %s: connected, session %d", self.path, welcome.session)
        _settle(up, welcome)

    def _run(self) -> None:
        attempt = 0
        while not self._stop.is_set():
            if self._sock is None:
                try:
                    self._open()
                    attempt = 0
                except (OSError, LanesError) as e:
                    delay = backoff_delay(attempt, *self._backoff, self._rng)
                    log.debug("arbiter %s: %s; retry in %.3f s", self.path, e, delay)
                    attempt += 1
                    self._stop.wait(delay)
                    continue
            why = self._read_loop()
            self._down(why)

    def _read_loop(self) -> str:
        """Routes replies until the connection ends; returns why it ended."""
        reader = self._reader
        while True:
            try:
                msg = _read(reader)
            except (OSError, LanesError, ValueError) as e:
                return str(e)
            if isinstance(msg, p.Grant | p.Reject):
                with self._lock:
                    fut = self._pending.pop(msg.id, None)
                if fut is not None:
                    _settle(fut, msg)
                elif isinstance(msg, p.Grant):  # its waiter gave up: give it back
                    self._send(self._generation, p.release(msg.id, 0))
            elif isinstance(msg, p.StatsReply):
                with self._lock:
                    waiter = self._stats.popleft() if self._stats else None
                if waiter is not None:
                    _settle(waiter, msg.stats)
            elif isinstance(msg, p.Revoked):
                log.warning("arbiter %s: grant %d revoked (held too long)", self.path, msg.id)
                self._revoked.add((self._generation, msg.id))
            elif isinstance(msg, p.Error):
                name = p.ERROR_NAMES.get(msg.code, str(msg.code))
                log.error("arbiter %s: error %s: %s", self.path, name, msg.message)
                return f"the daemon sent ERROR {name}: {msg.message}"
            elif isinstance(msg, p.Welcome):
                return "a second WELCOME"
            # RELEASED: nothing waits for it.

    def _down(self, why: str) -> None:
        with self._lock, self._send_lock:
            sock, self._sock = self._sock, None
            self._welcome = None
            pending, self._pending = self._pending, {}
            stats, self._stats = self._stats, deque()
            self._revoked.clear()
            self._up = Future()
        if sock is not None:
            sock.close()
        if not self._stop.is_set():
            log.warning("arbiter %s: connection lost (%s); reconnecting", self.path, why)
        for fut in pending.values():
            _settle(fut, error=Down(why))
        for waiter in stats:
            _settle(waiter, error=Down(why))


def _read(reader: Any) -> p.Message:
    """Reads one frame (EOF: ``ConnectionError``; oversized: ``arbiter_protocol``)."""
    head = reader.read(4)
    if len(head) < 4:
        raise ConnectionError("the daemon closed the connection")
    (n,) = struct.unpack(">I", head)
    if not 1 <= n <= p.MAX_FRAME:
        raise LanesError(p.ARBITER_PROTOCOL, f"a frame of {n} bytes; allowed 1..{p.MAX_FRAME}")
    payload = reader.read(n)
    if len(payload) < n:
        raise ConnectionError("the daemon closed the connection mid-frame")
    return p.decode(payload)
