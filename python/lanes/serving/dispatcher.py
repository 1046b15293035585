"""Scheduler glue: model queues, the policy engine, and the devices.

Each served model has a :class:`~lanes.serving.batcher.ModelQueue`. While a model is *ready* (see
batcher) and has fewer than ``num_batch_threads`` batches in flight, it has exactly one job in the
policy engine (``lanes._core.Scheduler``) standing for "this model's next batch", costed by the
engine's online estimate for the rows it would take now (resubmitted when that changes), arriving
when its oldest request did, with the oldest request's deadline as its target (``sjf``'s slack
rule) and, under ``edf``, the earliest deadline as its hard deadline.

When the engine starts a job on a device, the batch is cut from the queue at that moment (late
formation), run on the device's threads, and its measured device time is fed back to the
estimates. Then the engine is asked again — so a device never idles while a ready model waits.

Observability: :mod:`lanes.serving.occupancy` accounts each device's jobs (from dispatch to
completion), a :class:`~lanes.serving.timeline.Timeline` (when set) records every finished job,
and ``Served.estimates`` is a snapshot of the engine's estimates for batch sizes 1, 2, 4, ...,
``max_batch_size``, replaced after each measured batch, for readers on other threads (the metrics
scrape must never call the engine).

*Idle while waiting* — the rule, applied at every decision point (the end of ``_pump``, when
every decision the engines would make now has been applied): device d is idle while work waits
iff some model has a ready job in its engine that may run on d and d has a free slot for it —
under a shared engine, fewer jobs on d than the policy's per-device slots (1, or K for
``limit:K``); under ``independent``, fewer of that model's jobs on d than its
``num_batch_threads``. The time from the decision point where that becomes true to the one where
it is false is counted. A work-conserving policy leaves no such device, so it stays 0.

Policies: ``fifo``, ``limit:K``, ``sjf``, ``fair``, ``lanes``, ``edf`` run one engine for the whole
host, one job per device at a time (K under ``limit:K``; under ``lanes`` a short job may also take
the device's fast slot beside a long one, so a device has two threads). ``independent`` is the
status quo the field reports measured: every model has its own engine over all devices with
``num_batch_threads`` workers per device and launches whenever it has work, overlapping the other
models.

Everything here runs on the event loop; device work runs on the devices' threads.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lanes._core import Scheduler
from lanes.models.base import Model
from lanes.serving.batcher import DONE, ModelQueue, Pending, Refusal
from lanes.serving.devices import DeviceRunner
from lanes.serving.occupancy import Occupancy
from lanes.serving.stats import ModelStats
from lanes.serving.timeline import Job, Timeline

INDEPENDENT = "independent"


def now_ns() -> int:
    return time.monotonic_ns()


class ModelFailed(Exception):
    """A model raised while running a batch; every request of the batch answers 500."""


@dataclass(eq=False)
class Served:
    """A model as the server runs it: its queue, replicas, engine and counters."""

    id: int
    model: Model
    replicas: dict[int, Model]  # device index → replica loaded there
    engine: Scheduler
    engine_model: int
    queue: ModelQueue
    stats: ModelStats
    job: int | None = None  # the engine job standing for the next batch
    job_rows: int = 0
    inflight: int = 0
    timer: asyncio.TimerHandle | None = None
    executions: dict[int, int] = field(default_factory=dict)  # device → batches run
    running: dict[int, int] = field(default_factory=dict)  # device → batches on it now
    estimates: tuple[tuple[int, int], ...] = ()  # (batch size, estimated ns), a snapshot

    @property
    def devices(self) -> list[int]:
        return sorted(self.replicas)


class Dispatcher:
    """Drives the engine(s) for a set of served models on a set of devices."""

    def __init__(self, policy: str, runners: Sequence[DeviceRunner]) -> None:
        self.policy = policy
        self.runners = list(runners)
        self.models: dict[str, Served] = {}
        self._jobs: dict[int, Served] = {}
        self._ids = itertools.count(1)
        self._shared: Scheduler | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.TimerHandle | None = None  # the fast-lane gate's next admission
        self._tasks: set[asyncio.Task[Any]] = set()
        self.occupancy = Occupancy([r.device.name for r in self.runners])
        self.timeline: Timeline | None = None
        self.on_add: Callable[[Served], None] | None = None  # metrics bind a model's stats
        self._slots = self.device_slots(policy, [])
        self._regular = 1 if policy.startswith("lanes") else self._slots
        if policy != INDEPENDENT:
            self._shared = Scheduler(policy, [1] * len(self.runners))

    @staticmethod
    def device_slots(policy: str, models: Sequence[Model]) -> int:
        """Threads a device needs: the jobs it may run at once under ``policy``."""
        if policy == INDEPENDENT:
            return max(1, sum(m.batching.num_batch_threads for m in models))
        if policy.startswith("limit:"):
            return max(1, int(policy.split(":", 1)[1]))
        if policy == "lanes" or policy.startswith("lanes:"):
            return 2  # the regular slot and the fast lane's slot for a short job
        return 1

    def add(self, model: Model, replicas: dict[int, Model]) -> Served:
        mid = len(self.models)
        if self._shared is not None:
            engine, engine_model = self._shared, mid
        else:
            slots = model.batching.num_batch_threads
            engine, engine_model = Scheduler("fifo", [slots] * len(self.runners)), 0
        engine.set_prior(engine_model, model.cost.fixed_ms * 1e6, model.cost.per_item_ms * 1e6)
        served = Served(
            id=mid,
            model=model,
            replicas=replicas,
            engine=engine,
            engine_model=engine_model,
            queue=ModelQueue(model.name, model.batching),
            stats=ModelStats(model.name, model.version),
        )
        if self.on_add is not None:
            self.on_add(served)
        self.models[model.name] = served
        self._snapshot(served)
        return served

    def refresh_estimates(self) -> None:
        """Snapshot every model's estimates now (after warm-up fed the engine)."""
        for s in self.models.values():
            self._snapshot(s)

    def _snapshot(self, s: Served) -> None:
        """Replace ``s.estimates`` (readers on other threads see the old or the new tuple)."""
        sizes = [1]
        top = max(1, s.model.batching.max_batch_size)
        while sizes[-1] * 2 <= top:
            sizes.append(sizes[-1] * 2)
        if sizes[-1] != top:
            sizes.append(top)
        s.estimates = tuple((b, s.engine.estimate(s.engine_model, b)) for b in sizes)

    def engines(self) -> list[Scheduler]:
        if self._shared is not None:
            return [self._shared]
        return [s.engine for s in self.models.values()]

    # -- requests -------------------------------------------------------------------------------

    def predicted_finish(self, s: Served, rows: int, now: int) -> int:
        """(``edf`` admission) when a request of ``rows`` rows would finish if queued now: the
        estimated work queued for every model, spread over the devices, plus its own batch."""
        backlog = 0
        for other in self.models.values():
            if other.queue.rows:
                cap = max(1, other.model.batching.max_batch_size)
                batches = -(-other.queue.rows // cap)
                backlog += batches * other.engine.estimate(
                    other.engine_model, min(cap, other.queue.rows)
                )
        own = s.engine.estimate(s.engine_model, max(1, rows))
        return now + backlog // max(1, len(self.runners)) + own

    def enqueue(self, s: Served, p: Pending) -> None:
        """Queue an admitted, pre-processed request and let the engine see the model."""
        s.queue.push(p, now_ns())
        try:
            self._refresh(s)
        except BaseException:
            # Leave the queue as it was: the request out, its reservation back for the caller.
            s.queue.remove(p)
            s.queue.reserved += p.rows
            raise
        self._pump()

    def withdraw(self, s: Served, p: Pending) -> bool:
        """Take a still-queued request out (deadline passed or client gone)."""
        if not s.queue.remove(p):
            return False
        self._refresh(s)
        self._pump()
        return True

    # -- the engine -----------------------------------------------------------------------------

    def _limit(self, s: Served) -> int:
        b = s.model.batching.num_batch_threads
        return b * len(s.replicas) if self._shared is None else b

    def _refresh(self, s: Served) -> None:
        """Keep exactly one engine job for a ready model, costed for the rows it would take."""
        now = now_ns()
        if s.timer is not None:
            s.timer.cancel()
            s.timer = None
        ready = s.queue.ready_at(now)
        if ready is None or s.inflight >= self._limit(s):
            self._cancel_job(s)
            return
        if ready > now:
            self._cancel_job(s)
            loop = self._loop or asyncio.get_running_loop()
            s.timer = loop.call_later((ready - now) / 1e9, self._on_timer, s)
            return
        rows = s.queue.next_batch_rows()
        if s.job is not None and rows == s.job_rows:
            return
        self._cancel_job(s)
        job = next(self._ids)
        first = s.queue.items[0]
        deadline = s.queue.earliest_deadline() if self.policy == "edf" else None
        s.engine.submit(
            job,
            s.engine_model,
            rows,
            first.enqueued_ns,
            devices=s.devices,
            deadline_ns=deadline,
            target_ns=first.deadline_ns,
        )
        s.job, s.job_rows = job, rows
        self._jobs[job] = s

    def _cancel_job(self, s: Served) -> None:
        if s.job is not None:
            s.engine.cancel(s.job)
            self._jobs.pop(s.job, None)
            s.job = None

    def _on_timer(self, s: Served) -> None:
        s.timer = None
        self._refresh(s)
        self._pump()

    def _pump(self) -> None:
        """Apply every engine decision until none is left (work conserving)."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        progress = True
        while progress:
            progress = False
            for engine in self.engines():
                now = now_ns()
                for kind, job, arg in engine.dispatch(now):
                    progress = True
                    s = self._jobs.pop(job)
                    s.job = None
                    if kind == "drop":
                        # edf: the earliest deadline cannot be met; drop what cannot make it.
                        cost = s.engine.estimate(s.engine_model, max(1, s.job_rows))
                        for p in s.queue.drop_unreachable(now, cost):
                            s.stats.expired += 1
                            _fail(p, Refusal(504, _expired_message(s.model.name, p, now)))
                        self._refresh(s)
                        continue
                    assert isinstance(arg, int)
                    self._start(s, engine, job, arg, now)
        self._arm_wake()
        self._decision_point()

    def _arm_wake(self) -> None:
        """Dispatch again when the fast lane's gate (``hold``, ``budget``) admits a held job."""
        if self._wake is not None:
            self._wake.cancel()
            self._wake = None
        wakes = [w for w in (e.next_wake() for e in self.engines()) if w is not None]
        if wakes and self._loop is not None:
            delay = max(0, min(wakes) - now_ns()) / 1e9
            self._wake = self._loop.call_later(delay, self._on_wake)

    def _on_wake(self) -> None:
        self._wake = None
        self._pump()

    def _decision_point(self) -> None:
        """Open or close the idle-while-waiting intervals (the rule is in the module docs)."""
        waiting: set[int] = set()
        if self._jobs:
            occ = self.occupancy
            for s in self._jobs.values():
                for d in s.replicas:
                    if self._shared is not None:
                        # Regular slots only: `lanes`' fast slot is for short jobs.
                        free = occ.running(d) < self._regular
                    else:
                        free = s.running.get(d, 0) < s.model.batching.num_batch_threads
                    if free:
                        waiting.add(d)
        self.occupancy.mark_waiting(waiting, now_ns())

    def _start(self, s: Served, engine: Scheduler, job: int, device: int, now: int) -> None:
        batch, expired = s.queue.take(now)
        for p in expired:
            s.stats.expired += 1
            _fail(p, Refusal(504, _expired_message(s.model.name, p, now)))
        if not batch:
            engine.complete(job, now)
            self._refresh(s)
            return
        s.inflight += 1
        s.running[device] = s.running.get(device, 0) + 1
        self.occupancy.begin(device, now)
        estimate = engine.estimate(s.engine_model, sum(p.rows for p in batch))
        task = asyncio.get_running_loop().create_task(
            self._run(s, engine, job, device, batch, (now, estimate))
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self._refresh(s)

    async def _run(
        self,
        s: Served,
        engine: Scheduler,
        job: int | None,  # None: granted by the arbiter, not by the engine
        device: int,
        batch: list[Pending],
        dispatch: tuple[int, int],  # (dispatched ns, estimated cost ns)
    ) -> bool:
        """Run ``batch`` on ``device`` and answer its requests; true when the model succeeded."""
        runner = self.runners[device]
        replica = s.replicas[device]
        rows = [p.rows for p in batch]
        total = sum(rows)

        def work() -> list[Any]:
            joined = replica.collate([p.item for p in batch])
            outputs = replica.predict(joined)
            return replica.split(outputs, rows)

        started = now_ns()
        error: BaseException | None = None
        parts: list[Any] = []
        try:
            if runner.sim is not None:
                modelled = s.model.cost.ms(total) * 1e6
                parts, _ = await asyncio.gather(runner.run(work), runner.sim.hold(modelled))
            else:
                parts = await runner.run(work)
            if len(parts) != len(batch):
                raise ModelFailed(f"split returned {len(parts)} parts for {len(batch)} requests")
        except Exception as exc:  # a model failure answers 500 for this batch only
            error = exc
        ended = now_ns()
        held = ended - started
        if job is not None:
            engine.complete(job, ended)
        s.inflight -= 1
        s.executions[device] = s.executions.get(device, 0) + 1
        s.running[device] -= 1
        self.occupancy.end(device, ended)
        if self.timeline is not None:
            dispatched, estimate = dispatch
            self.timeline.record(
                Job(
                    device,
                    s.model.name,
                    total,
                    len(batch),
                    dispatched,
                    ended,
                    estimate,
                    held,
                    dispatched - batch[0].enqueued_ns,
                    error is not None,
                )
            )
        if error is None:
            engine.observe(s.engine_model, total, held)
            self._snapshot(s)
            s.stats.batch(total, len(batch), held)
            for p, part in zip(batch, parts, strict=True):
                s.stats.queue.add(started - p.enqueued_ns)
                s.stats.compute_infer.add(held)
                p.state = DONE
                if not p.future.done():
                    p.future.set_result(part)
        else:
            message = f"model '{s.model.name}' failed: {type(error).__name__}: {error}"
            for p in batch:
                p.state = DONE
                if not p.future.done():
                    p.future.set_exception(Refusal(500, message))
        self._refresh(s)
        self._pump()
        return error is None

    def close(self) -> None:
        if self._wake is not None:
            self._wake.cancel()
        for s in self.models.values():
            if s.timer is not None:
                s.timer.cancel()
        for t in list(self._tasks):
            t.cancel()


def _expired_message(model: str, p: Pending, now: int) -> str:
    waited = (now - p.arrival_ns) / 1e6
    return f"model '{model}': deadline exceeded after {waited:.1f} ms in the queue; not run"


def _fail(p: Pending, exc: Exception) -> None:
    p.state = DONE
    if not p.future.done():
        p.future.set_exception(exc)
