"""The asyncio (aiohttp) data plane, kept only for ``--arbiter`` until the native data plane
(:mod:`lanes.serving.server`) takes its device grants from a ``lanes arbiter`` daemon; then it goes.

Server lifecycle: explicit phases, uvicorn-style, in ``Server.state``:

``loading`` → ``warming`` → ``ready`` → ``draining`` → ``stopped``.

- **loading**: the HTTP socket opens first, so ``/v2/health/live`` answers 200 at once while
  ``/v2/health/ready``, each model's ``ready`` route and ``infer`` answer 503 naming the phase.
  A replica of every model is placed on every eligible device.
- **warming**: every model runs warm-up batches on every device (:mod:`lanes.serving.warmup`).
- **ready**: serving.
- **draining** (SIGTERM/SIGINT, or :meth:`Handle.stop` with a ``drain_timeout``): readiness turns
  false at once and the listening socket closes (new connections are refused); requests that
  arrive on open keep-alive connections answer 503. Queued and running requests get up to
  ``drain_timeout`` seconds to finish; what is left then answers 503. :func:`serve` then returns
  (``lanes serve`` exits 0). A second signal exits at once with status 128 + the signal number
  (130 for SIGINT, 143 for SIGTERM).
- **stopped**: connections closed, threads released.

:func:`serve` runs until SIGINT/SIGTERM (the CLI), with logs set up by
:mod:`lanes.serving.logs`; :func:`start_in_thread` runs a server on its own event loop thread and
returns a handle (tests, notebooks, the lab).

Threads, all explicit (design.md §4.8): the event loop (HTTP, queues, the scheduler), the CPU
pool of ``workers`` threads for pre/post-processing, and per device as many threads as jobs it
may run at once; each ONNX Runtime session gets its device's intra-op thread count.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from lanes.errors import BAD_ARGUMENT, LanesError
from lanes.models.base import MODEL_INVALID, Device, Model
from lanes.serving.app import build_app, error
from lanes.serving.batcher import Refusal
from lanes.serving.config import ServeConfig
from lanes.serving.devices import DeviceRunner, resolve_devices
from lanes.serving.dispatcher import INDEPENDENT, Dispatcher
from lanes.serving.logs import Logs
from lanes.serving.metrics import instrument
from lanes.serving.warmup import Warmed, warm_up

LOADING, WARMING, READY, DRAINING, STOPPED = "loading", "warming", "ready", "draining", "stopped"
"""The phases of a server, in order (``Server.state``)."""
CLIENT_GONE = 499
"""The status the access log gives a request whose client went away (nginx's convention)."""
SHUTDOWN_S = 2.0
"""After the drain: how long connections get to finish writing before they are closed."""
log = logging.getLogger("lanes.serve")
access = logging.getLogger("lanes.access")


def load_models(config: ServeConfig) -> list[Model]:
    """The models ``config`` names: a repository, or the built-in demo zoo."""
    if config.models is None:
        from lanes.models.zoo import zoo_models

        return list(zoo_models(backend=config.zoo_backend))
    from lanes.models.repository import load_repository

    return load_repository(config.models)


def _dispatcher(config: ServeConfig, runners: Sequence[DeviceRunner]) -> Dispatcher:
    """The in-process scheduler, or (``arbiter``) grants from a ``lanes arbiter`` daemon."""
    if config.arbiter is None:
        return Dispatcher(config.policy, runners)
    from lanes.arbiter import Client
    from lanes.serving.arbitrated import ArbitratedDispatcher

    client = Client(
        config.arbiter.removeprefix("unix:"),
        service=f"lanes-serve:{os.getpid()}",
        fallback=config.arbiter_fallback,
        devices=[r.device.name for r in runners],
    )
    return ArbitratedDispatcher(config.policy, runners, client)


class Server:
    """One ``lanes serve`` instance: models on devices behind the HTTP API."""

    def __init__(self, config: ServeConfig, models: Sequence[Model]) -> None:
        from lanes import _core

        self.config = config
        self.version = _core.version()
        self.state = LOADING
        resolved = resolve_devices(
            config.devices,
            threads=config.cpu_threads,
            independent=config.policy == INDEPENDENT and config.arbiter is None,
        )
        if resolved.note is not None:
            log.info("%s", resolved.note)
        devices = resolved.devices
        # Under an arbiter, the daemon's capacity decides how many batches share a device.
        slots = Dispatcher.device_slots(
            INDEPENDENT if config.arbiter is not None else config.policy, models
        )
        runners = [DeviceRunner(d, slots) for d in devices]
        self.dispatcher = _dispatcher(config, runners)
        self.metrics, self.timeline = instrument(self.dispatcher, config, self.version, models)
        self.metrics_port: int | None = None  # bound once listening, when metrics are on
        self.cpu = ThreadPoolExecutor(max_workers=config.workers, thread_name_prefix="lanes-cpu")
        self.models = list(models)
        names = [m.name for m in self.models]
        if len(set(names)) != len(names):
            raise LanesError(MODEL_INVALID, f"duplicate model names in {names}")
        if not self.models:
            raise LanesError(MODEL_INVALID, "no models to serve")
        self.runner: web.AppRunner | None = None
        self.port = config.port
        self.warmed: list[Warmed] = []
        self.warmup_seconds = 0.0
        self._requests: set[asyncio.Task[Any]] = set()  # HTTP handlers in flight
        self._idle = asyncio.Event()
        self._cut = False  # the drain timed out: what is left answers 503
        self.track = web.middleware(lambda request, handler: self._track(request, handler))

    @property
    def ready(self) -> bool:
        return self.state == READY

    @property
    def devices(self) -> list[Device]:
        return [r.device for r in self.dispatcher.runners]

    async def _track(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """``track``, the outermost middleware: counts requests in flight for the drain,
        answers 503 for one cut at the drain timeout, logs every 500 (a model failure) as a
        warning and, with ``access_log``, one line per request."""
        task = asyncio.current_task()
        assert task is not None
        self._requests.add(task)
        t0 = time.perf_counter_ns()
        response: web.StreamResponse | None = None
        try:
            response = await handler(request)
            return response
        except asyncio.CancelledError:
            if not self._cut:  # the client went away
                response = web.Response(status=CLIENT_GONE)
                raise
            uncancel = getattr(task, "uncancel", None)  # Python 3.11+
            if uncancel is not None:
                uncancel()
            response = error(503, self._cut_message)
            return response
        finally:
            self._requests.discard(task)
            if not self._requests:
                self._idle.set()
            status = 500 if response is None else response.status
            if status == 500:
                _log_failure(request, response, status)
            if self.config.access_log:
                access.info(
                    "%s %s %d",
                    request.method,
                    request.path,
                    status,
                    extra={
                        "method": request.method,
                        "path": request.path,
                        "status": status,
                        "duration_ms": round((time.perf_counter_ns() - t0) / 1e6, 3),
                        "model": request.match_info.get("model"),
                    },
                )

    @property
    def _cut_message(self) -> str:
        return f"draining: not finished within the drain timeout ({self.config.drain_timeout} s)"

    def load(self) -> None:
        """Place a replica of every model on every eligible device (blocking)."""
        runners = self.dispatcher.runners
        for model in self.models:
            replicas: dict[int, Model] = {}
            for i, r in enumerate(runners):
                if r.device.kind in model.devices:
                    replicas[i] = model.replica(r.device)
            if not replicas:
                kinds = ", ".join(sorted({r.device.kind for r in runners}))
                raise LanesError(
                    MODEL_INVALID,
                    f"model '{model.name}' runs on {list(model.devices)}, "
                    f"but the devices are {kinds}",
                )
            self.dispatcher.add(model, replicas)

    async def start(self) -> None:
        """Open the socket, then load and warm up; returns once ready (stopped on failure)."""
        await self.listen()
        await self.prepare()

    async def prepare(self) -> None:
        """``loading`` → ``warming`` → ``ready``; a failure stops the server and is raised."""
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(None, self.load)
            self.state = WARMING
            t0 = time.perf_counter()
            served = list(self.dispatcher.models.values())
            runners = self.dispatcher.runners
            self.warmed = await loop.run_in_executor(
                self.cpu,
                warm_up,
                [s.model for s in served],
                [[s.replicas.get(i) for i in range(len(runners))] for s in served],
                [r.device for r in runners],
                self.config.warmup_batches,
            )
            self.warmup_seconds = time.perf_counter() - t0
            by_name = {s.model.name: s for s in served}
            sim = {r.device.name for r in runners if r.device.simulated}
            for w in self.warmed:
                if w.device not in sim:
                    s = by_name[w.model]
                    for size, ns in w.last_ns.items():
                        s.engine.observe(s.engine_model, size, ns)
            self.dispatcher.refresh_estimates()  # warm-up fed the engine
        except BaseException:
            await self.stop()
            raise
        if self.state == WARMING:  # not drained meanwhile
            self.state = READY
            log.info("ready: warm-up took %.2f s", self.warmup_seconds)

    async def listen(self) -> None:
        """Open the HTTP socket (phase ``loading``: live, not ready)."""
        app = build_app(self)
        self.runner = web.AppRunner(
            app, handler_cancellation=True, access_log=None, shutdown_timeout=SHUTDOWN_S
        )
        await self.runner.setup()
        site = web.TCPSite(self.runner, self.config.host, self.config.port, backlog=1024)
        try:
            await site.start()
        except OSError as err:  # port in use, address not on this host, name not found
            await self.runner.cleanup()
            reason = (
                os.strerror(err.errno)
                if err.errno and not isinstance(err, socket.gaierror)
                else (err.strerror or str(err))
            )
            raise LanesError(
                BAD_ARGUMENT,
                f"cannot listen on {self.config.host}:{self.config.port}: {reason} "
                "(see --host, --port)",
            ) from None
        server = getattr(site, "_server", None)
        if server is not None and server.sockets:
            self.port = server.sockets[0].getsockname()[1]
        if self.config.metrics_port is not None:
            try:
                self.metrics_port = await self.metrics.start(
                    self.config.host, self.config.metrics_port
                )
            except LanesError:
                await self.runner.cleanup()
                raise
        log.info("listening on %s (%s)", self.url, self.state)

    async def drain(self, timeout: float) -> None:
        """``draining``: not ready, listener closed, up to ``timeout`` s for the requests in
        flight; then queued and running requests left answer 503. Returns when none is left."""
        if self.state in (DRAINING, STOPPED):
            return
        self.state = DRAINING
        loop = asyncio.get_running_loop()
        if self.runner is not None:
            for site in list(self.runner.sites):
                await site.stop()
        log.info("draining: %d requests in flight, up to %g s", len(self._requests), timeout)
        t0 = loop.time()
        if not await self._quiet(timeout):
            left = len(self._requests)
            self._cut = True
            refusal = Refusal(503, self._cut_message)
            for s in self.dispatcher.models.values():
                for p in list(s.queue.items):
                    if self.dispatcher.withdraw(s, p) and not p.future.done():
                        p.future.set_exception(refusal)
            for task in list(self._requests):
                task.cancel()
            await self._quiet(SHUTDOWN_S)
            log.warning("drain timeout: %d requests answered 503", left)
        log.info("drained in %.2f s", loop.time() - t0)

    async def _quiet(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for no request in flight; True when none is."""
        if not self._requests:
            return True
        self._idle.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._idle.wait(), timeout)
        return not self._requests

    async def stop(self) -> None:
        """``stopped``: close connections and the listener, release every thread."""
        if self.state == STOPPED:
            return
        self.state = STOPPED
        if self.runner is not None:
            await self.runner.cleanup()
        self.dispatcher.close()
        for r in self.dispatcher.runners:
            r.close()
        self.cpu.shutdown(wait=False, cancel_futures=True)
        await self.metrics.close()
        if self.config.trace is not None:
            await self.timeline.save(self.config.trace)

    @property
    def url(self) -> str:
        return f"http://{self.config.host}:{self.port}"


def _log_failure(request: web.Request, response: web.StreamResponse | None, status: int) -> None:
    """A 500 answer as a warning, with the error message of its body."""
    message = ""
    body = getattr(response, "body", None)
    if isinstance(body, bytes):
        with contextlib.suppress(ValueError, AttributeError):
            message = str(json.loads(body).get("error", ""))
    log.warning(
        "%s %s answered %d: %s",
        request.method,
        request.path,
        status,
        message,
        extra={"status": status, "model": request.match_info.get("model")},
    )


async def _serve_forever(server: Server, announce: Any) -> None:
    """Start, serve until the first SIGINT/SIGTERM, drain, stop; a second signal exits at once
    (status 128 + the signal number)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal(sig: signal.Signals) -> None:
        if stop.is_set():
            sys.stderr.write(f"lanes serve: second {sig.name}: exiting at once\n")
            sys.stderr.flush()
            os._exit(128 + sig.value)
        log.info("%s: draining (a second signal exits at once)", sig.name)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, on_signal, sig)
    try:
        await server.listen()
        starting = asyncio.ensure_future(server.prepare())
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if starting.done():
            starting.result()  # a failed start raises here
            announce(server)
            await stopping
            await server.drain(server.config.drain_timeout)
        else:
            starting.cancel()
    finally:
        await server.stop()


def serve(config: ServeConfig, models: Sequence[Model] | None = None, announce: Any = None) -> None:
    """Serve until SIGINT or SIGTERM, then drain (see the module docstring), logging through
    :class:`lanes.serving.logs.Logs` as ``config`` says."""
    logs = Logs(config.log_format, config.log_level, config.access_log)
    try:
        server = Server(config, load_models(config) if models is None else models)
        asyncio.run(_serve_forever(server, announce or (lambda s: None)))
    finally:
        logs.close()


@dataclass
class Handle:
    """A server running on its own thread (from :func:`start_in_thread`)."""

    server: Server
    loop: asyncio.AbstractEventLoop
    thread: threading.Thread
    booted: threading.Event = field(default_factory=threading.Event)
    """Set once start-up is over: ready, or failed (``failure``)."""
    failure: list[BaseException] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.server.url

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Block until the server is ready; a failed load or warm-up is raised here."""
        if not self.booted.wait(timeout):
            raise TimeoutError(f"server not ready after {timeout} s (state {self.server.state})")
        if self.failure:
            raise self.failure[0]

    def stop(self, drain_timeout: float | None = None) -> None:
        """Stop the server; with ``drain_timeout``, drain it first (see :meth:`Server.drain`)."""
        if drain_timeout is not None and self.loop.is_running():
            drained = asyncio.run_coroutine_threadsafe(self.server.drain(drain_timeout), self.loop)
            drained.result(timeout=drain_timeout + SHUTDOWN_S + 10)
        fut = asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop)
        with contextlib.suppress(Exception):
            fut.result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)

    def __enter__(self) -> Handle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_in_thread(
    config: ServeConfig, models: Sequence[Model] | None = None, wait_ready: bool = True
) -> Handle:
    """Start a server on a new thread and return once it is ready (errors re-raised here).

    With ``wait_ready=False`` it returns as soon as the socket listens (phase ``loading``);
    :meth:`Handle.wait_ready` then waits for ready and raises a failed start-up.
    """
    server = Server(config, load_models(config) if models is None else models)
    loop = asyncio.new_event_loop()
    listening = threading.Event()
    handle = Handle(server, loop, threading.Thread())

    def run() -> None:
        asyncio.set_event_loop(loop)

        async def boot() -> None:
            try:
                await server.listen()
                listening.set()
                await server.prepare()
            except BaseException as err:
                handle.failure.append(err)
            finally:
                listening.set()
                handle.booted.set()

        task = loop.create_task(boot())
        loop.run_forever()
        del task
        loop.close()

    handle.thread = threading.Thread(target=run, name="lanes-serve", daemon=True)
    handle.thread.start()
    (handle.booted if wait_ready else listening).wait()
    if handle.failure:
        loop.call_soon_threadsafe(loop.stop)
        handle.thread.join(timeout=10)
        raise handle.failure[0]
    return handle
