"""Per-model queues and late batch formation (design.md §3).

A :class:`ModelQueue` holds one model's admitted requests in arrival order. The rules:

- **Bound.** At most ``max_enqueued_batches * max(1, max_batch_size)`` rows are admitted at once
  (queued or still in pre-processing); past it :meth:`admit` refuses with 429 naming the model
  and the bound. So memory stays bounded under any overload. One request larger than the bound
  (a full client-side batch) is admitted when nothing else is, so it is never refused as "queue
  full" by an idle model.
- **Readiness.** The model is *ready* when its queue holds ``max_batch_size`` rows, or its oldest
  request has waited ``batch_timeout_micros``, or that timeout is 0 (eager: an idle device takes
  whatever is queued, so a lone request pays no batching delay and batches grow by themselves
  while devices are busy).
- **Late formation.** A batch is cut only when a device has been granted (:meth:`take`): requests
  whose deadline has passed are removed first (answered 504; they never reach a device), then
  whole requests are taken in arrival order while the rows fit ``max_batch_size``. A request is
  never split; one larger than ``max_batch_size`` (a full client-side batch) runs alone. With
  batching off every request is a batch of its own.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from lanes.models.base import Batching

QUEUED, RUNNING, DONE = "queued", "running", "done"


class Refusal(Exception):
    """A request the server answers with an error status: ``{"error": message}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(eq=False)
class Pending:
    """One admitted request on its way through a model's queue."""

    item: Any
    rows: int
    arrival_ns: int
    deadline_ns: int | None
    future: asyncio.Future[Any]
    state: str = QUEUED
    enqueued_ns: int = 0
    started_ns: int = 0

    def expired(self, now_ns: int) -> bool:
        return self.deadline_ns is not None and now_ns >= self.deadline_ns


@dataclass
class ModelQueue:
    """One model's queue; see the module docs for the rules."""

    model: str
    batching: Batching
    items: deque[Pending] = field(default_factory=deque)
    rows: int = 0
    reserved: int = 0

    @property
    def bound(self) -> int:
        return self.batching.queue_rows

    def admit(self, rows: int) -> None:
        """Reserve room for a request of ``rows`` rows, or refuse it with 429."""
        held = self.rows + self.reserved
        if held + rows > self.bound and held > 0:
            raise Refusal(
                429,
                f"model '{self.model}': queue full ({self.bound} rows = max_enqueued_batches "
                f"{self.batching.max_enqueued_batches} x max_batch_size "
                f"{max(1, self.batching.max_batch_size)}); retry later",
            )
        self.reserved += rows

    def release(self, rows: int) -> None:
        """Give back a reservation (the request failed before it was queued)."""
        self.reserved -= rows

    def push(self, p: Pending, now_ns: int) -> None:
        """Queue an admitted request (its reservation becomes a queued row count)."""
        self.reserved -= p.rows
        p.enqueued_ns = now_ns
        self.items.append(p)
        self.rows += p.rows

    def remove(self, p: Pending) -> bool:
        """Take a queued request out (cancelled or expired); false if it was not queued."""
        if p.state != QUEUED:
            return False
        try:
            self.items.remove(p)
        except ValueError:
            return False
        self.rows -= p.rows
        p.state = DONE
        return True

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Pending]:
        return iter(self.items)

    @property
    def oldest_ns(self) -> int | None:
        return self.items[0].enqueued_ns if self.items else None

    def next_batch_rows(self) -> int:
        """Rows the next batch would take if cut now (for its cost estimate)."""
        if not self.items:
            return 0
        cap = self.batching.max_batch_size
        if cap == 0:
            return self.items[0].rows
        total = 0
        for p in self.items:
            if total and total + p.rows > cap:
                break
            total += p.rows
            if total >= cap:
                break
        return total

    def ready_at(self, now_ns: int) -> int | None:
        """``now_ns`` if the model is ready now, the instant it will be, or None (empty)."""
        if not self.items:
            return None
        b = self.batching
        if b.batch_timeout_micros == 0 or b.max_batch_size == 0 or self.rows >= b.max_batch_size:
            return now_ns
        due = self.items[0].enqueued_ns + b.batch_timeout_micros * 1000
        return now_ns if due <= now_ns else due

    def take(self, now_ns: int) -> tuple[list[Pending], list[Pending]]:
        """Cut a batch now: ``(batch, expired)``; both leave the queue."""
        expired: list[Pending] = []
        batch: list[Pending] = []
        cap = self.batching.max_batch_size
        total = 0
        while self.items:
            p = self.items[0]
            if p.expired(now_ns):
                self.items.popleft()
                self.rows -= p.rows
                p.state = DONE
                expired.append(p)
                continue
            if batch and (cap == 0 or total + p.rows > cap):
                break
            self.items.popleft()
            self.rows -= p.rows
            p.state = RUNNING
            p.started_ns = now_ns
            batch.append(p)
            total += p.rows
            if cap == 0 or total >= cap:
                break
        return batch, expired

    def drop_unreachable(self, now_ns: int, cost_ns: int) -> list[Pending]:
        """(``edf``) remove the requests that cannot meet their deadline even if started now."""
        gone = [
            p for p in self.items if p.deadline_ns is not None and now_ns + cost_ns > p.deadline_ns
        ]
        for p in gone:
            self.remove(p)
        return gone

    def earliest_deadline(self) -> int | None:
        deadlines = [p.deadline_ns for p in self.items if p.deadline_ns is not None]
        return min(deadlines) if deadlines else None
