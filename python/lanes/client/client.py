"""The client: :class:`AsyncClient` (asyncio) and :class:`Client` (threads), one engine.

A call (:meth:`AsyncClient.infer`) checks its inputs, joins a batch (lanes.client.batcher),
and returns its own rows of the answer. A closed batch is sent by :meth:`AsyncClient._send`:

1. calls whose deadline has passed leave with ``deadline_exceeded`` — nothing is sent for them;
2. the member is picked by least outstanding estimated work (lanes.client.balancer);
3. the batch's deadline — the latest of its calls' (none if a call has none), so the server
   drops it only when no caller can use it — goes as the KServe ``timeout`` parameter, in the
   µs remaining at this attempt. As on the server, a deadline applies until the batch starts
   on a device: the server answers 504 for a batch still queued at its deadline, and a batch
   that started completes. A call whose own deadline is earlier than its batch's fails with
   ``deadline_exceeded`` at that deadline without waiting for the answer;
4. a failure the retry rule allows (lanes.client.errors: the request never reached a device)
   is retried on another up member, at most ``max_attempts`` in all and never past the
   deadline; a failure that drops the member starts its half-open probing (lanes.client.members).

:class:`Client` runs an :class:`AsyncClient` on an event loop of its own thread, so calls from
many threads batch together.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import threading
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from lanes.client.balancer import pick
from lanes.client.batcher import Arrays, Batch, Call, Coalescer, split, stack
from lanes.client.config import ClientConfig, MemberSource
from lanes.client.errors import AttemptFailed, ClientError, drops_member, retryable
from lanes.client.members import Members, MemberState
from lanes.client.transport import RestTransport, Transport
from lanes.errors import (
    BAD_INPUT,
    CLIENT_CLOSED,
    DEADLINE_EXCEEDED,
    MODEL_FAILED,
    NO_MEMBERS,
    LanesError,
)
from lanes.models.base import datatype_of
from lanes.probe import Event

T = TypeVar("T")
RETRY_BACKOFF_S = 0.005
"""The wait before retrying a 429 on a member already tried (doubling per attempt)."""


@dataclass(frozen=True)
class ModelInfo:
    """What the client needs of a model's metadata."""

    name: str
    max_batch_size: int
    inputs: tuple[str, ...]
    metadata: dict[str, Any]


class AsyncClient:
    """A KServe v2 client for one server or a fleet, with client-side batching and balancing.

    ``AsyncClient(ClientConfig(members=[...]))`` or ``AsyncClient(members=[...])``; use it on
    one event loop (the first it is called on), and ``await client.close()`` (or ``async
    with``) at the end.
    """

    def __init__(
        self,
        config: ClientConfig | None = None,
        *,
        members: MemberSource | None = None,
        transport: Transport | None = None,
        on_event: Callable[[Event], None] | None = None,
    ) -> None:
        if config is None:
            if members is None:
                raise ClientError(NO_MEMBERS, "AsyncClient needs a config or members")
            config = ClientConfig(members=members)
        self.config = config
        self._transport = transport or RestTransport(
            connect_timeout_s=config.connect_timeout_s, max_connections=config.max_connections
        )
        self._members = Members(config, self._transport, on_event)
        self._coalescer = Coalescer(config.batch_timeout_ms / 1000, self._schedule)
        self._models: dict[str, ModelInfo] = {}
        self._loading: dict[str, asyncio.Task[ModelInfo]] = {}
        self._picks = itertools.count(1)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._upkeep: asyncio.Task[None] | None = None
        self._closed = False

    async def __aenter__(self) -> AsyncClient:
        await self._start()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def _start(self) -> None:
        if self._closed:
            raise ClientError(CLIENT_CLOSED, "the client is closed")
        if self._upkeep is None:
            await self._members.refresh()
            self._upkeep = asyncio.get_running_loop().create_task(self._members.run())

    def members(self) -> list[MemberState]:
        """The members now: URL, up or down (and why), work in flight, batches and rows sent."""
        return self._members.states()

    def observe(self, event: Event) -> None:
        """Feed an event of the TCP prober (lanes.probe); see Members.observe."""
        self._members.observe(event)

    async def metadata(self, model: str) -> dict[str, Any]:
        """The model's metadata as a member answers ``GET /v2/models/{model}``."""
        await self._start()
        return (await self._model(model)).metadata

    async def infer(
        self,
        model: str,
        inputs: Mapping[str, npt.ArrayLike],
        *,
        timeout_s: float | None = None,
    ) -> Arrays:
        """Run ``model`` on ``inputs`` (name → array, batch dimension first); the outputs.

        ``timeout_s`` (default ``ClientConfig.timeout_s``) is the call's deadline, from now.
        Raises :class:`~lanes.client.errors.ClientError`.
        """
        await self._start()
        loop = asyncio.get_running_loop()
        timeout = self.config.timeout_s if timeout_s is None else timeout_s
        deadline = None if timeout is None else loop.time() + timeout
        if timeout is not None and timeout <= 0:
            raise ClientError(DEADLINE_EXCEEDED, f"timeout {timeout} s: expired before sending")
        info = await self._model(model, deadline)
        arrays, rows = _check_inputs(info, inputs)
        limit = info.max_batch_size or rows
        if self.config.max_batch_size is not None:
            limit = min(limit, self.config.max_batch_size)
        call = Call(arrays, rows, deadline, loop.create_future())
        self._coalescer.add(model, call, limit)
        return await asyncio.shield(call.future)

    async def _model(self, model: str, deadline: float | None = None) -> ModelInfo:
        """The model's metadata, read once (concurrent first calls share one read)."""
        info = self._models.get(model)
        if info is not None:
            return info
        loading = self._loading.get(model)
        if loading is None:
            loading = asyncio.get_running_loop().create_task(self._read_model(model, deadline))
            self._loading[model] = loading
            loading.add_done_callback(lambda _: self._loading.pop(model, None))
        return await asyncio.shield(loading)

    async def _read_model(self, model: str, deadline: float | None) -> ModelInfo:
        loop = asyncio.get_running_loop()
        last: ClientError | None = None
        for attempt in range(1, self.config.max_attempts + 1):
            candidates = self._members.up()
            if not candidates:
                raise last or self._no_members()
            member = candidates[(attempt - 1) % len(candidates)]
            wait = self.config.request_timeout_s
            if deadline is not None:
                wait = min(wait, max(1e-3, deadline - loop.time()))
            try:
                meta = await self._transport.get(member.url, f"/v2/models/{model}", wait)
            except AttemptFailed as failure:
                last = ClientError.of(failure, member.url, attempt)
                if drops_member(failure):
                    self._members.drop(member, failure.message)
                if not retryable(failure):
                    raise last from None
                continue
            inputs = tuple(t["name"] for t in meta.get("inputs", []))
            size = int(meta.get("parameters", {}).get("max_batch_size", 0))
            info = self._models[model] = ModelInfo(model, size, inputs, meta)
            self._members.models.add(model)
            await self._members.read_estimates()
            return info
        assert last is not None
        raise last

    def _no_members(self) -> ClientError:
        states = self._members.states()
        if not states:
            return ClientError(NO_MEMBERS, "no members: the member source listed none")
        down = "; ".join(f"{s.url}: {s.reason}" for s in states)
        return ClientError(NO_MEMBERS, f"no member is up ({len(states)} down: {down})")

    def _schedule(self, batch: Batch) -> None:
        task = asyncio.get_running_loop().create_task(self._send(batch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, batch: Batch) -> None:
        """Send one batch with the module's rules; every call's future is settled."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        calls = []
        for c in batch.calls:
            if c.deadline is not None and now >= c.deadline:
                _fail(c, ClientError(DEADLINE_EXCEEDED, "deadline passed before sending"))
            else:
                calls.append(c)
        if not calls:
            return
        inputs = stack(calls)
        rows = sum(c.rows for c in calls)
        deadlines = [c.deadline for c in calls]
        deadline = None if None in deadlines else max(d for d in deadlines if d is not None)
        early = sorted(
            (
                c
                for c in calls
                if c.deadline is not None and (deadline is None or c.deadline < deadline)
            ),
            key=lambda c: c.deadline or 0.0,
        )
        watch = _Overdue(early, deadline) if early else None
        try:
            error = await self._attempts(batch.model, inputs, rows, deadline, calls)
        except Exception as err:  # a bug must not leave callers waiting forever
            error = ClientError(MODEL_FAILED, f"client error: {type(err).__name__}: {err}")
        finally:
            if watch is not None:
                watch.cancel()
        if error is not None:
            for c in calls:
                _fail(c, error)

    async def _attempts(
        self,
        model: str,
        inputs: Arrays,
        rows: int,
        deadline: float | None,
        calls: list[Call],
    ) -> ClientError | None:
        """Try members until the batch answers (None) or the retry rule stops (the error)."""
        loop = asyncio.get_running_loop()
        tried: set[str] = set()
        last: ClientError | None = None
        for attempt in range(1, self.config.max_attempts + 1):
            up = self._members.up()
            fresh = [m for m in up if m.url not in tried]
            if not up:
                return last or self._no_members()
            if not fresh and last is not None:  # all tried (429s): wait a little, then again
                await asyncio.sleep(RETRY_BACKOFF_S * 2 ** (attempt - 2))
            now = loop.time()
            if deadline is not None and now >= deadline:
                why = "" if last is None else f" (last attempt: {last.message})"
                return ClientError(
                    DEADLINE_EXCEEDED,
                    f"deadline passed before sending attempt {attempt}{why}",
                    attempts=attempt - 1,
                )
            candidates = fresh or up
            chosen = pick(candidates, model, rows)
            assert chosen is not None
            member, cost = candidates[chosen[0]], chosen[1]
            timeout_us = None if deadline is None else max(1, math.ceil((deadline - now) * 1e6))
            wait = self.config.request_timeout_s + (0.0 if deadline is None else deadline - now)
            member.start(cost, rows, next(self._picks))
            try:
                outputs = await self._transport.infer(
                    member.url, model, inputs, timeout_us=timeout_us, wait_s=wait
                )
            except AttemptFailed as failure:
                member.finish(cost)
                last = ClientError.of(failure, member.url, attempt)
                tried.add(member.url)
                if drops_member(failure):
                    self._members.drop(member, failure.message)
                if not retryable(failure):
                    return last
                continue
            member.finish(cost)
            member.cost_model(model).observe(rows, loop.time() - now, self.config.ewma_alpha)
            try:
                parts = split(outputs, calls)
            except ClientError as err:
                return err
            for c, part in zip(calls, parts, strict=True):
                if not c.future.done():
                    c.future.set_result(part)
            return None
        return last

    async def close(self) -> None:
        """Send what is batched, wait for it, and close connections."""
        if self._closed:
            return
        self._closed = True
        self._coalescer.flush()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._upkeep is not None:
            self._upkeep.cancel()
            await asyncio.gather(self._upkeep, return_exceptions=True)
        await self._members.close()
        await self._transport.close()


class _Overdue:
    """Fails the calls due before their batch's deadline, each at its own deadline, with one
    timer at a time (``calls`` sorted by deadline)."""

    def __init__(self, calls: list[Call], batch_deadline: float | None) -> None:
        self._calls = calls
        self._next = 0
        self._batch_deadline = batch_deadline
        self._timer: asyncio.TimerHandle | None = None
        self._arm()

    def _arm(self) -> None:
        due = self._calls[self._next].deadline if self._next < len(self._calls) else None
        self._timer = None if due is None else asyncio.get_running_loop().call_at(due, self._fire)

    def _fire(self) -> None:
        now = asyncio.get_running_loop().time()
        while self._next < len(self._calls):
            c = self._calls[self._next]
            if c.deadline is not None and c.deadline > now:
                break
            _fail(c, _late(c, self._batch_deadline))
            self._next += 1
        self._arm()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()


def _late(call: Call, batch_deadline: float | None) -> ClientError:
    if batch_deadline is None:
        why = "the batch has no deadline"
    else:
        later = (batch_deadline - (call.deadline or 0.0)) * 1000
        why = f"the batch's deadline is {later:.1f} ms later"
    return ClientError(
        DEADLINE_EXCEEDED, f"deadline passed while its batch was out ({why})", sent=True
    )


def _fail(call: Call, error: ClientError) -> None:
    if not call.future.done():
        call.future.set_exception(error)


def _check_inputs(info: ModelInfo, inputs: Mapping[str, npt.ArrayLike]) -> tuple[Arrays, int]:
    """numpy arrays of the model's inputs and their common first dimension, or ``bad_input``.
    (Beyond having a KServe datatype, datatypes and shapes are the server's to judge: a model
    may take several forms.)"""
    if not inputs:
        raise ClientError(BAD_INPUT, f"model '{info.name}': no inputs given")
    arrays = {name: np.asarray(value) for name, value in inputs.items()}
    for name, array in arrays.items():
        if info.inputs and name not in info.inputs:
            raise ClientError(
                BAD_INPUT,
                f"model '{info.name}' has no input '{name}'; its inputs: " + ", ".join(info.inputs),
            )
        try:
            datatype_of(array)
        except LanesError as err:
            raise ClientError(BAD_INPUT, f"input '{name}': {err.message}") from None
    firsts = {a.shape[0] if a.ndim else 0 for a in arrays.values()}
    if info.max_batch_size == 0:
        return arrays, 1
    if len(firsts) != 1 or (rows := firsts.pop()) < 1:
        shapes = ", ".join(f"{n} {list(a.shape)}" for n, a in arrays.items())
        raise ClientError(
            BAD_INPUT,
            f"model '{info.name}' batches: every input needs the same first (batch) dimension "
            f">= 1; got {shapes}",
        )
    return arrays, rows


class Client:
    """The thread-safe, blocking face of :class:`AsyncClient`: it runs one on an event loop of
    its own thread, so calls from many threads are batched together. ``close()`` (or ``with``)
    at the end."""

    def __init__(
        self,
        config: ClientConfig | None = None,
        *,
        members: MemberSource | None = None,
        transport: Transport | None = None,
        on_event: Callable[[Event], None] | None = None,
    ) -> None:
        self._async = AsyncClient(config, members=members, transport=transport, on_event=on_event)
        self.config = self._async.config
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="lanes-client", daemon=True
        )
        self._thread.start()
        self._closed = False

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        if self._closed:
            coroutine.close()
            raise ClientError(CLIENT_CLOSED, "the client is closed")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def infer(
        self, model: str, inputs: Mapping[str, npt.ArrayLike], *, timeout_s: float | None = None
    ) -> Arrays:
        """As :meth:`AsyncClient.infer`, blocking this thread."""
        return self._run(self._async.infer(model, inputs, timeout_s=timeout_s))

    def metadata(self, model: str) -> dict[str, Any]:
        return self._run(self._async.metadata(model))

    def members(self) -> list[MemberState]:
        return self._run(self._states())

    async def _states(self) -> list[MemberState]:
        await self._async._start()
        return self._async.members()

    def observe(self, event: Event) -> None:
        self._loop.call_soon_threadsafe(self._async.observe, event)

    def close(self) -> None:
        """Send what is batched, wait for it, stop the loop's thread."""
        if self._closed:
            return
        self._run(self._async.close())
        self._closed = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()
