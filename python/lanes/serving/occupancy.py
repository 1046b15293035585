"""Device occupancy: the jobs each device runs now, and the time accounts metrics read.

The dispatcher calls :meth:`Occupancy.begin` when it starts a batch on a device (the engine's
dispatch), :meth:`Occupancy.end` when the batch completes, and :meth:`Occupancy.mark_waiting` at
each of its decision points. From those, per device:

- *busy* time: time with at least one job on the device;
- *overlap* time: time with more than one job on it (only ``independent`` and ``limit:K`` run
  more than one);
- *idle while waiting* time: the intervals opened and closed by :meth:`Occupancy.mark_waiting`
  (the rule that decides them is the dispatcher's; see ``Dispatcher._decision_point``);
- *jobs*: batches completed.

All updates happen on the event loop, with the time passed in. Another thread (the metrics
scrape) reads with :meth:`DeviceAccount.read`: each account keeps one immutable :class:`Tally`,
replaced whole on every update, so a reader never sees half an update. A read extends the open
intervals to the reader's clock, and never reports less than it reported before (an update
stamped slightly before a concurrent read would otherwise make a counter step back).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from typing import NamedTuple


class Tally(NamedTuple):
    """One device's accounts, closed at ``at_ns``."""

    at_ns: int = 0
    running: int = 0
    jobs: int = 0
    busy_ns: int = 0
    overlap_ns: int = 0
    idle_wait_ns: int = 0
    waiting_since: int = -1  # -1: not waiting


class Totals(NamedTuple):
    """What a reader sees: seconds and counts, open intervals extended to the read."""

    jobs: int
    busy_s: float
    overlap_s: float
    idle_wait_s: float


class DeviceAccount:
    """The accounts of one device (see the module docs)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.tally = Tally()
        self._lock = threading.Lock()  # readers only: the high-water marks
        self._seen = Totals(0, 0.0, 0.0, 0.0)

    @property
    def running(self) -> int:
        return self.tally.running

    @staticmethod
    def _advanced(t: Tally, now: int) -> Tally:
        dt = max(0, now - t.at_ns)
        return t._replace(
            at_ns=max(now, t.at_ns),
            busy_ns=t.busy_ns + (dt if t.running >= 1 else 0),
            overlap_ns=t.overlap_ns + (dt if t.running >= 2 else 0),
        )

    def begin(self, now: int) -> None:
        t = self._advanced(self.tally, now)
        self.tally = t._replace(running=t.running + 1)

    def end(self, now: int) -> None:
        t = self._advanced(self.tally, now)
        self.tally = t._replace(running=max(0, t.running - 1), jobs=t.jobs + 1)

    def waiting(self, now: int, on: bool) -> None:
        t = self.tally
        if on and t.waiting_since < 0:
            self.tally = t._replace(waiting_since=now)
        elif not on and t.waiting_since >= 0:
            waited = max(0, now - t.waiting_since)
            self.tally = t._replace(waiting_since=-1, idle_wait_ns=t.idle_wait_ns + waited)

    def read(self, now: int | None = None) -> Totals:
        """The accounts up to ``now`` (default: the monotonic clock); safe from any thread."""
        t = self.tally  # one reference: a consistent update
        now = time.monotonic_ns() if now is None else now
        a = self._advanced(t, now)
        idle = a.idle_wait_ns + (max(0, now - t.waiting_since) if t.waiting_since >= 0 else 0)
        fresh = Totals(a.jobs, a.busy_ns / 1e9, a.overlap_ns / 1e9, idle / 1e9)
        with self._lock:
            seen = self._seen
            self._seen = Totals(
                max(fresh.jobs, seen.jobs),
                max(fresh.busy_s, seen.busy_s),
                max(fresh.overlap_s, seen.overlap_s),
                max(fresh.idle_wait_s, seen.idle_wait_s),
            )
            return self._seen


class Occupancy:
    """Every device's :class:`DeviceAccount`, indexed as the dispatcher's runners."""

    def __init__(self, names: Sequence[str]) -> None:
        self.devices = [DeviceAccount(n) for n in names]
        self._waiting: set[int] = set()

    def running(self, device: int) -> int:
        return self.devices[device].tally.running

    def begin(self, device: int, now: int) -> None:
        self.devices[device].begin(now)

    def end(self, device: int, now: int) -> None:
        self.devices[device].end(now)

    def mark_waiting(self, devices: Iterable[int], now: int) -> None:
        """Exactly ``devices`` are idle while work waits from ``now`` on (others stop)."""
        now_waiting = set(devices)
        if not now_waiting and not self._waiting:
            return
        for d in now_waiting - self._waiting:
            self.devices[d].waiting(now, True)
        for d in self._waiting - now_waiting:
            self.devices[d].waiting(now, False)
        self._waiting = now_waiting
