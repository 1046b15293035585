"""What a client does while the daemon is down: the two documented fallbacks.

- ``fail_open``: run without the arbiter at ``limit:1`` per device *within this process*:
  :class:`LocalDevices` hands each device to one slot at a time. Other processes on the host
  do the same, so devices may be shared by several processes until the daemon is back.
- ``fail_closed``: run nothing; a slot waits for the daemon up to its timeout and then raises
  ``arbiter_unavailable`` (a server answers 503).

:class:`LocalDevices` is a FIFO of waiters over a set of free devices: a waiter takes the first
free device among those it may use; when a device frees it goes to the oldest waiter that may
use it. Waiters are ``concurrent.futures.Future`` objects, so threads wait on them directly and
asyncio tasks through ``asyncio.wrap_future``; no thread is spent waiting.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future

FAIL_OPEN = "fail_open"
FAIL_CLOSED = "fail_closed"
FALLBACKS = (FAIL_OPEN, FAIL_CLOSED)


class LocalDevices:
    """One slot per device for this process (``limit:1``), first come first served."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._busy: set[str] = set()
        self._waiters: list[tuple[tuple[str, ...], Future[str]]] = []

    def acquire(self, eligible: Sequence[str]) -> Future[str]:
        """A future that resolves to a device of ``eligible`` once it is this caller's."""
        fut: Future[str] = Future()
        choices = tuple(eligible)
        with self._lock:
            free = next((d for d in choices if d not in self._busy), None)
            # Invariant: no free device has a waiter that may use it (release hands it over),
            # so taking a free device never jumps the queue.
            if free is not None:
                self._busy.add(free)
                fut.set_result(free)
            else:
                self._waiters.append((choices, fut))
        return fut

    def release(self, device: str) -> None:
        """Frees ``device``: the oldest waiter that may use it gets it."""
        with self._lock:
            for i, (choices, fut) in enumerate(self._waiters):
                if device in choices:
                    del self._waiters[i]
                    fut.set_result(device)
                    return
            self._busy.discard(device)

    def abandon(self, fut: Future[str]) -> None:
        """Withdraws a waiter that no longer wants a device (or frees what it was given)."""
        with self._lock:
            for i, (_, waiting) in enumerate(self._waiters):
                if waiting is fut:
                    del self._waiters[i]
                    fut.cancel()
                    return
        if fut.done() and not fut.cancelled():
            self.release(fut.result())

    def busy(self) -> frozenset[str]:
        """Devices held now."""
        with self._lock:
            return frozenset(self._busy)
