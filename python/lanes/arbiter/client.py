"""``lanes.arbiter.Client``: hold a device slot from the host's arbiter around GPU work.

::

    client = Client("/run/lanes-arbiter.sock", service="ocr", fallback="fail_open")
    with client.slot("line_rnn_zh", batch=8) as device:        # from threads
        run_batch(device)
    async with client.slot("line_rnn_zh", batch=8) as device:  # from asyncio
        await run_batch_async(device)

A slot sends ACQUIRE and waits for GRANT (``device`` is the granted device's name, e.g.
``"cuda:1"``); on leaving the block it sends RELEASE with the time spent inside the block
(``run_ns``; 0 when the block raised, so a failure does not teach the daemon a wrong cost).
REJECT raises :class:`~lanes.errors.LanesError` with a stable code (``arbiter_deadline``,
``arbiter_overload``, ``arbiter_no_such_device``, ``arbiter_bad_request``,
``arbiter_cancelled``, ``arbiter_shutting_down``). A cancelled asyncio task, or a slot whose
wait ran out, withdraws its ACQUIRE (CANCEL), and a grant that crossed the cancel is released.

One connection per client, shared by every thread and event loop using it (see
:mod:`lanes.arbiter.connection`). While the daemon is down the client follows its fallback
(:mod:`lanes.arbiter.fallback`): ``fail_open`` runs the block at ``limit:1`` per device in
this process; ``fail_closed`` waits for the daemon up to the slot's timeout, then raises
``arbiter_unavailable``.

The acquire logic is written once, as a generator that yields the futures it waits on;
:meth:`Slot.__enter__` drives it by blocking on each future, :meth:`Slot.__aenter__` by
awaiting it, so threads and asyncio follow the same rules.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import sys
import time
from collections.abc import Generator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from lanes.arbiter import protocol as p
from lanes.arbiter.connection import Connection, Down
from lanes.arbiter.fallback import FAIL_OPEN, FALLBACKS, LocalDevices
from lanes.errors import BAD_ARGUMENT, LanesError

ARBITER_UNAVAILABLE = "arbiter_unavailable"
"""The daemon is down and the fallback could not run the slot (``fail_closed`` past its
timeout, or ``fail_open`` with no device list known)."""

REPLY_GRACE_S = 1.0
"""How long past its deadline a slot waits for the daemon's REJECT before giving up itself."""

_Step = tuple["Future[Any]", float | None]
"""What the acquire logic waits for next: a future, at most this many seconds (None: no bound)."""


class _Expired(Exception):
    """A step's wait ran out."""


def _retrieved(fut: asyncio.Future[Any]) -> None:
    """Marks an abandoned future's exception as seen (no "never retrieved" warning)."""
    if not fut.cancelled():
        fut.exception()


@dataclass(frozen=True)
class Held:
    """What a slot holds: a grant of the daemon, or a local device (``fallback``)."""

    device: str
    """The device's name (the daemon's WELCOME names, or the client's own list)."""
    index: int | None
    """The device number in the daemon's list; None under the fallback."""
    wait_ns: int
    """Time queued in the daemon (0 under the fallback)."""
    fallback: bool
    id: int = 0
    generation: int = 0


class Client:
    """A connection to ``lanes arbiter`` at ``path``; see the module docs.

    ``service`` names this process in the daemon's stats (default: the program's name).
    ``fallback`` is ``"fail_open"`` or ``"fail_closed"``. ``devices`` lists the host's device
    names for ``fail_open`` before the daemon was ever reached (afterwards its own list is
    used). ``backoff_s`` is (base, cap) of the reconnect backoff.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        service: str | None = None,
        fallback: str = FAIL_OPEN,
        devices: Sequence[str] = (),
        backoff_s: tuple[float, float] = (0.05, 2.0),
    ) -> None:
        if fallback not in FALLBACKS:
            raise LanesError(
                BAD_ARGUMENT, f"fallback {fallback!r}: expected one of {', '.join(FALLBACKS)}"
            )
        base, cap = backoff_s
        if not 0 < base <= cap:
            raise LanesError(BAD_ARGUMENT, f"backoff_s {backoff_s}: need 0 < base <= cap")
        self.path = os.fspath(path)
        self.fallback = fallback
        name = service or os.path.basename(sys.argv[0] or "") or "python"
        self._known: tuple[str, ...] = tuple(devices)
        self._local = LocalDevices()
        self._conn = Connection(self.path, name, backoff_s=(base, cap))

    @property
    def connected(self) -> bool:
        """True while the connection to the daemon is up."""
        return self._conn.welcome is not None

    @property
    def devices(self) -> tuple[str, ...]:
        """The daemon's device names (the last WELCOME's), else the client's own list."""
        return self._conn.last_devices or self._known

    def wait_connected(self, timeout_s: float) -> bool:
        """Waits up to ``timeout_s`` for the connection to be up; true when it is."""
        try:
            self._conn.when_up().result(timeout_s)
        except concurrent.futures.TimeoutError:
            return False
        return True

    def slot(
        self,
        model: str,
        batch: int = 1,
        *,
        cost_ms: float | None = None,
        timeout_s: float | None = None,
        devices: Sequence[str | int] | None = None,
    ) -> Slot:
        """A device slot for one batch of ``model``; use it with ``with`` or ``async with``.

        ``cost_ms``: this job's expected device time (default: the daemon's estimate).
        ``timeout_s``: give up (``arbiter_deadline``) unless granted within it.
        ``devices``: eligible devices, by name or number (default: any).
        """
        if batch < 1:
            raise LanesError(BAD_ARGUMENT, f"batch {batch}: must be at least 1")
        if cost_ms is not None and not cost_ms >= 0:
            raise LanesError(BAD_ARGUMENT, f"cost_ms {cost_ms}: must be a number >= 0")
        if timeout_s is not None and not timeout_s > 0:
            raise LanesError(BAD_ARGUMENT, f"timeout_s {timeout_s}: must be a number > 0")
        return Slot(self, model, batch, cost_ms, timeout_s, devices)

    def stats(self, timeout_s: float = 5.0) -> dict[str, Any]:
        """The daemon's STATS JSON (raises ``arbiter_unavailable`` while it is down)."""
        try:
            return self._conn.stats().result(timeout_s)
        except (Down, concurrent.futures.TimeoutError) as e:
            raise LanesError(ARBITER_UNAVAILABLE, f"no stats from {self.path}: {e!r}") from None

    def close(self) -> None:
        """Closes the connection (the daemon releases anything still held)."""
        self._conn.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the acquire logic, shared by threads and asyncio ---------------------------------------

    def _indices(self, devices: Sequence[str | int] | None, names: tuple[str, ...]) -> list[int]:
        out: list[int] = []
        for d in devices or ():
            if isinstance(d, int):
                out.append(d)
            elif d in names:
                out.append(names.index(d))
            else:
                raise LanesError(
                    "arbiter_no_such_device", f"device {d!r}: the arbiter has {list(names)}"
                )
        return out

    def _local_names(self, devices: Sequence[str | int] | None) -> tuple[str, ...]:
        known = self.devices
        if not devices:
            names = known
        else:
            names = tuple(
                d if isinstance(d, str) else known[d]
                for d in devices
                if isinstance(d, str) or 0 <= d < len(known)
            )
        if not names:
            raise LanesError(
                ARBITER_UNAVAILABLE,
                f"the arbiter at {self.path} is down and no device list is known for "
                "fail_open: pass Client(devices=[...])",
            )
        return names

    def _acquire(self, slot: Slot) -> Generator[_Step, Any, Held]:
        """The rule of a slot's wait; yields futures to wait on (see the module docs)."""
        start = time.monotonic()
        deadline = None if slot.timeout_s is None else start + slot.timeout_s
        cost_ns = 0 if slot.cost_ms is None else round(slot.cost_ms * 1e6)

        def left() -> float | None:
            return None if deadline is None else deadline - time.monotonic()

        def expired() -> LanesError:
            return LanesError(
                p.REJECT_CODES[1],
                f"{slot.model} batch {slot.batch}: no device within timeout_s={slot.timeout_s}",
            )

        while True:
            remaining = left()
            if remaining is not None and remaining <= 0:
                raise expired()
            welcome = self._conn.welcome
            try:
                if welcome is None:
                    raise Down(self.path)
                indices = tuple(self._indices(slot.devices, welcome.devices))
                timeout_ns = 0 if remaining is None else max(1, round(remaining * 1e9))
                id, gen, fut = self._conn.acquire(
                    slot.model, slot.batch, cost_ns, timeout_ns, indices
                )
            except Down:
                if self.fallback == FAIL_OPEN:
                    return (yield from self._local_slot(slot, left, expired))
                try:
                    yield self._conn.when_up(), left()
                except _Expired:
                    raise LanesError(
                        ARBITER_UNAVAILABLE,
                        f"the arbiter at {self.path} is down and did not come back within "
                        f"timeout_s={slot.timeout_s} (fail_closed)",
                    ) from None
                continue
            try:
                wait = left()
                reply = yield fut, None if wait is None else max(0.0, wait) + REPLY_GRACE_S
            except Down:
                continue  # the connection dropped while queued: go round (fallback)
            except BaseException as e:
                self._conn.abandon(id, gen, fut)
                if isinstance(e, _Expired):
                    raise expired() from None
                raise
            if isinstance(reply, p.Grant):
                names = welcome.devices
                name = names[reply.device] if reply.device < len(names) else str(reply.device)
                return Held(name, reply.device, reply.wait_ns, False, id, gen)
            if reply.reason == 6 and self.fallback == FAIL_OPEN:  # shutting down
                return (yield from self._local_slot(slot, left, expired))
            code = p.REJECT_CODES.get(reply.reason, "arbiter_rejected")
            raise LanesError(
                code, f"arbiter rejected {slot.model} batch {slot.batch}: {reply.message}"
            )

    def _local_slot(self, slot: Slot, left: Any, expired: Any) -> Generator[_Step, Any, Held]:
        """fail_open: a device of this process's own ``limit:1`` set."""
        fut = self._local.acquire(self._local_names(slot.devices))
        try:
            device = yield fut, left()
        except BaseException as e:
            self._local.abandon(fut)
            if isinstance(e, _Expired):
                raise expired() from None
            raise
        return Held(str(device), None, 0, True)

    def _release(self, held: Held, run_ns: int) -> None:
        if held.fallback:
            self._local.release(held.device)
        else:
            self._conn.release(held.id, held.generation, run_ns)


class Slot:
    """One acquire → grant → release around a block (``with`` or ``async with``, once)."""

    def __init__(
        self,
        client: Client,
        model: str,
        batch: int,
        cost_ms: float | None,
        timeout_s: float | None,
        devices: Sequence[str | int] | None,
    ) -> None:
        self.client = client
        self.model = model
        self.batch = batch
        self.cost_ms = cost_ms
        self.timeout_s = timeout_s
        self.devices = devices
        self.held: Held | None = None
        """What was granted, once inside the block."""
        self._t0 = 0
        self._used = False

    @property
    def revoked(self) -> bool:
        """True when the daemon took the device back (``--revoke`` past ``--max-hold``)."""
        h = self.held
        return h is not None and not h.fallback and self.client._conn.is_revoked(h.generation, h.id)

    def _begin(self) -> Generator[_Step, Any, Held]:
        if self._used:
            raise LanesError(BAD_ARGUMENT, "a slot is used once; call client.slot() again")
        self._used = True
        return self.client._acquire(self)

    def _end(self, failed: bool) -> None:
        held, self.held = self.held, None
        if held is not None:
            run_ns = 0 if failed else time.perf_counter_ns() - self._t0
            self.client._release(held, run_ns)

    def __enter__(self) -> str:
        steps = self._begin()
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                fut, wait = steps.send(value) if error is None else steps.throw(error)
            except StopIteration as done:
                self.held = done.value
                break
            value, error = None, None
            try:
                value = fut.result(None if wait is None else max(0.0, wait))
            except concurrent.futures.TimeoutError:
                error = _Expired()
            except BaseException as e:
                error = e
        self._t0 = time.perf_counter_ns()
        return self.held.device

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._end(exc_type is not None)

    async def __aenter__(self) -> str:
        steps = self._begin()
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                fut, wait = steps.send(value) if error is None else steps.throw(error)
            except StopIteration as done:
                self.held = done.value
                break
            value, error = None, None
            try:
                inner = asyncio.wrap_future(fut)
                inner.add_done_callback(_retrieved)
                waiting = asyncio.shield(inner)
                value = await asyncio.wait_for(waiting, None if wait is None else max(0.0, wait))
            except asyncio.TimeoutError:
                error = _Expired()
            except BaseException as e:
                error = e
        self._t0 = time.perf_counter_ns()
        return self.held.device

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._end(exc_type is not None)
