"""Server lifecycle: load models, place replicas on devices, serve HTTP, stop.

:func:`serve` runs until SIGINT/SIGTERM (the CLI); :func:`start_in_thread` runs a server on its
own event loop thread and returns a handle (tests, notebooks, the lab). Models load before the
socket opens ready: ``/v2/health/ready`` answers 503 until every replica is loaded.

Threads, all explicit (design.md §4.8): the event loop (HTTP, queues, the scheduler), the CPU
pool of ``workers`` threads for pre/post-processing, and per device as many threads as jobs it
may run at once; each ONNX Runtime session gets its device's intra-op thread count.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from lanes.errors import BAD_ARGUMENT, LanesError
from lanes.models.base import MODEL_INVALID, Model
from lanes.serving.app import build_app
from lanes.serving.config import ServeConfig
from lanes.serving.devices import DeviceRunner, parse_devices
from lanes.serving.dispatcher import Dispatcher


def load_models(config: ServeConfig) -> list[Model]:
    """The models ``config`` names: a repository, or the built-in demo zoo."""
    if config.models is None:
        from lanes.models.zoo import zoo_models

        return list(zoo_models(backend=config.zoo_backend))
    from lanes.models.repository import load_repository

    return load_repository(config.models)


class Server:
    """One ``lanes serve`` instance: models on devices behind the HTTP API."""

    def __init__(self, config: ServeConfig, models: Sequence[Model]) -> None:
        from lanes import _core

        self.config = config
        self.version = _core.version()
        self.state = "loading"
        devices = parse_devices(config.devices, threads=config.cpu_threads)
        slots = Dispatcher.device_slots(config.policy, models)
        runners = [DeviceRunner(d, slots) for d in devices]
        self.dispatcher = Dispatcher(config.policy, runners)
        self.cpu = ThreadPoolExecutor(max_workers=config.workers, thread_name_prefix="lanes-cpu")
        self.models = list(models)
        names = [m.name for m in self.models]
        if len(set(names)) != len(names):
            raise LanesError(MODEL_INVALID, f"duplicate model names in {names}")
        if not self.models:
            raise LanesError(MODEL_INVALID, "no models to serve")
        self.runner: web.AppRunner | None = None
        self.port = config.port

    @property
    def ready(self) -> bool:
        return self.state == "ready"

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
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self.load)
        app = build_app(self)
        self.runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
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
        self.state = "ready"

    async def stop(self) -> None:
        self.state = "stopping"
        if self.runner is not None:
            await self.runner.cleanup()
        self.dispatcher.close()
        for r in self.dispatcher.runners:
            r.close()
        self.cpu.shutdown(wait=False, cancel_futures=True)

    @property
    def url(self) -> str:
        return f"http://{self.config.host}:{self.port}"


async def _serve_forever(server: Server, announce: Any) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    await server.start()
    announce(server)
    try:
        await stop.wait()
    finally:
        await server.stop()


def serve(config: ServeConfig, models: Sequence[Model] | None = None, announce: Any = None) -> None:
    """Serve until SIGINT or SIGTERM."""
    server = Server(config, load_models(config) if models is None else models)
    asyncio.run(_serve_forever(server, announce or (lambda s: None)))


@dataclass
class Handle:
    """A server running on its own thread (from :func:`start_in_thread`)."""

    server: Server
    loop: asyncio.AbstractEventLoop
    thread: threading.Thread

    @property
    def url(self) -> str:
        return self.server.url

    def stop(self) -> None:
        fut = asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop)
        with contextlib.suppress(Exception):
            fut.result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)

    def __enter__(self) -> Handle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_in_thread(config: ServeConfig, models: Sequence[Model] | None = None) -> Handle:
    """Start a server on a new thread and return once it is ready (errors re-raised here)."""
    server = Server(config, load_models(config) if models is None else models)
    loop = asyncio.new_event_loop()
    started: asyncio.Future[None] | None = None
    done = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        nonlocal started
        asyncio.set_event_loop(loop)

        async def boot() -> None:
            try:
                await server.start()
            except BaseException as err:
                failure.append(err)
            finally:
                done.set()

        task = loop.create_task(boot())
        loop.run_forever()
        del task
        loop.close()

    thread = threading.Thread(target=run, name="lanes-serve", daemon=True)
    thread.start()
    done.wait()
    if failure:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        raise failure[0]
    return Handle(server, loop, thread)
