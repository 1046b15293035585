"""Scheduling through ``lanes arbiter``: devices shared with other processes.

``lanes serve --arbiter unix:PATH`` replaces the in-process policy engine's device grants with
the host daemon's (docs/arbiter.md), so several ``lanes serve`` processes, or a ``lanes serve``
and a foreign service, share the devices without overlapping and in the daemon's order.

The rule: while a model is *ready* (see :mod:`lanes.serving.batcher`) and has fewer than its
``num_batch_threads`` batches in flight, it has exactly one ACQUIRE outstanding at the daemon,
standing for "this model's next batch": the model's name, the rows it would take now, the local
engine's cost estimate for them, the earliest queued deadline as its timeout, and the devices
holding a replica as its eligible devices. When the GRANT arrives, the batch is cut from the
queue at that moment (late formation, up to ``max_batch_size`` rows — the batch may have grown
while it waited), run on the granted device, and released with its measured run time, which
also feeds the local estimate. A model whose queue empties withdraws its ACQUIRE (CANCEL).
When a batch ends, the model's next ACQUIRE is sent before the finished batch's RELEASE, so the
daemon sees the model waiting at the moment it decides who gets the device next.

A REJECT consumes work so that it cannot loop: ``arbiter_deadline`` drops the queued requests
that can no longer meet their deadline (504); any other reason (overload, shutting down, the
daemon unreachable under ``fail_closed``) answers one batch of the queue 503 with the daemon's
reason. While the daemon is down the client's fallback applies (``fail_open``: this process
runs at ``limit:1`` per device by itself; ``fail_closed``: 503 after the deadline).

The local policy (``--policy``) does not order anything here: the daemon's does. Warm-up runs
before the server is ready and does not ask the daemon.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from lanes.arbiter import Client
from lanes.errors import LanesError
from lanes.serving.batcher import Refusal
from lanes.serving.devices import DeviceRunner
from lanes.serving.dispatcher import Dispatcher, Served, _expired_message, _fail, now_ns

log = logging.getLogger("lanes.serve")

RETRY_S = 0.001
"""Pause before a model asks again after a REJECT (the reject already consumed work)."""


class _Unused(Exception):
    """The grant found nothing to run (the queue emptied meanwhile): release it unmeasured."""


class _Failed(Exception):
    """The model raised on the granted device: release without a measurement."""


class ArbitratedDispatcher(Dispatcher):
    """A :class:`Dispatcher` whose device grants come from a ``lanes arbiter`` daemon."""

    def __init__(self, policy: str, runners: Sequence[DeviceRunner], client: Client) -> None:
        super().__init__(policy, runners)
        self.client = client
        self._index = {r.device.name: i for i, r in enumerate(self.runners)}
        self._acquiring: dict[str, asyncio.Task[None]] = {}

    def _refresh(self, s: Served) -> None:
        """Keep exactly one ACQUIRE outstanding for a ready model with room in flight."""
        now = now_ns()
        if s.timer is not None:
            s.timer.cancel()
            s.timer = None
        pending = self._acquiring.get(s.model.name)
        ready = s.queue.ready_at(now)
        if ready is None or ready > now:
            if pending is not None:
                pending.cancel()  # the client sends CANCEL (a crossed grant is released)
                self._acquiring.pop(s.model.name, None)
            if ready is not None:
                loop = self._loop or asyncio.get_running_loop()
                s.timer = loop.call_later((ready - now) / 1e9, self._on_timer, s)
            return
        if pending is not None or s.inflight >= self._limit(s):
            return
        loop = self._loop or asyncio.get_running_loop()
        self._loop = loop
        task = loop.create_task(self._acquire(s))
        self._acquiring[s.model.name] = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _acquire(self, s: Served) -> None:
        rows = max(1, s.queue.next_batch_rows())
        deadline = s.queue.earliest_deadline()
        timeout_s = None if deadline is None else max(1e-4, (deadline - now_ns()) / 1e9)
        slot = self.client.slot(
            s.model.name,
            batch=rows,
            cost_ms=s.engine.estimate(s.engine_model, rows) / 1e6,
            timeout_s=timeout_s,
            devices=[self.runners[d].device.name for d in s.devices],
        )
        me = asyncio.current_task()
        try:
            async with slot as name:
                if self._acquiring.get(s.model.name) is me:
                    del self._acquiring[s.model.name]
                device = self._index.get(name)
                if device is None or device not in s.replicas:
                    raise LanesError(
                        "arbiter_bad_request",
                        f"the arbiter granted device '{name}', which has no replica of "
                        f"'{s.model.name}' here (devices: {', '.join(self._index)})",
                    )
                ok = await self._granted(s, device)
                # ``_run`` asked for the next batch already; let that ACQUIRE reach the daemon
                # before this RELEASE, so the daemon sees this model waiting when it decides.
                await asyncio.sleep(0)
                if not ok:
                    raise _Failed
        except (_Unused, _Failed):
            pass
        except LanesError as err:
            self._refused(s, err)
            await asyncio.sleep(RETRY_S)
        finally:
            if self._acquiring.get(s.model.name) is me:
                del self._acquiring[s.model.name]
        self._refresh(s)
        self._pump()

    async def _granted(self, s: Served, device: int) -> bool:
        """Cut the batch now and run it on ``device``; false when the model raised."""
        now = now_ns()
        batch, expired = s.queue.take(now)
        for p in expired:
            s.stats.expired += 1
            _fail(p, Refusal(504, _expired_message(s.model.name, p, now)))
        if not batch:
            raise _Unused
        s.inflight += 1
        s.running[device] = s.running.get(device, 0) + 1
        self.occupancy.begin(device, now)
        estimate = s.engine.estimate(s.engine_model, sum(p.rows for p in batch))
        self._refresh(s)  # the next batch may ask while this one runs
        return await self._run(s, s.engine, None, device, batch, (now, estimate))

    def _refused(self, s: Served, err: LanesError) -> None:
        """A REJECT (or the daemon unreachable): consume work so the model cannot loop."""
        now = now_ns()
        if err.code == "arbiter_deadline":
            cost = s.engine.estimate(s.engine_model, max(1, s.queue.next_batch_rows()))
            for p in s.queue.drop_unreachable(now, cost):
                s.stats.expired += 1
                _fail(p, Refusal(504, _expired_message(s.model.name, p, now)))
            return
        if err.code == "arbiter_cancelled":
            return
        log.warning("arbiter refused a batch of '%s': %s", s.model.name, err.message)
        batch, expired = s.queue.take(now)
        for p in expired:
            s.stats.expired += 1
            _fail(p, Refusal(504, _expired_message(s.model.name, p, now)))
        for p in batch:
            _fail(p, Refusal(503, f"model '{s.model.name}': {err.message}"))

    def close(self) -> None:
        super().close()
        self.client.close()
