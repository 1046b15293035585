"""Server lifecycle: explicit phases, uvicorn-style, in ``Server.state``:

``loading`` → ``warming`` → ``ready`` → ``draining`` → ``stopped``.

The data plane — the REST and gRPC front ends, queues, batching, the scheduler, the device
executors, statistics, metrics and the timeline — is native (``lanes._core.NativeServer``, the
lanes-server crate). This module drives its lifecycle and runs what stays in Python: loading the
models, their replicas and warm-up. A Python model's ``predict`` is called once per batch on the
device's executor thread through PyO3 (:mod:`lanes.serving.bridge`); its ``preprocess`` and
``postprocess``, when it overrides them, once per request on a pool of ``workers`` threads.

- **loading**: the sockets open first, so ``/v2/health/live`` answers 200 at once while
  ``/v2/health/ready``, each model's ``ready`` route and ``infer`` answer 503 naming the phase.
  A replica of every model is placed on every eligible device.
- **warming**: every model runs warm-up batches on every device (:mod:`lanes.serving.warmup`).
- **ready**: serving.
- **draining** (SIGTERM/SIGINT, or :meth:`Handle.stop` with a ``drain_timeout``): readiness turns
  false at once and the listening sockets close (new connections are refused); requests that
  arrive on open keep-alive connections answer 503. Queued and running requests get up to
  ``drain_timeout`` seconds to finish; what is left then answers 503. :func:`serve` then returns
  (``lanes serve`` exits 0). A second signal exits at once with status 128 + the signal number
  (130 for SIGINT, 143 for SIGTERM).
- **stopped**: connections closed, threads released.

With ``--arbiter unix:PATH`` the device grants come from the host's ``lanes arbiter`` daemon
instead of the local policy (the native driver's link: ACQUIRE per model's next batch, RELEASE
with the measured run time, ``--arbiter-fallback`` while the daemon is down; docs/arbiter.md).
Warm-up runs before the server is ready and does not ask the daemon.

:func:`serve` runs until SIGINT/SIGTERM (the CLI), with logs set up by
:mod:`lanes.serving.logs`; :func:`start_in_thread` starts a server and returns a handle (tests,
notebooks, the lab).

Threads, all explicit (design.md §4.8): the native runtime's I/O threads (HTTP, gRPC, metrics,
the driver task), a blocking pool of ``workers`` threads for per-request hooks, and per device as
many executor threads as jobs it may run at once; each ONNX Runtime session gets its device's
intra-op thread count.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lanes.errors import BAD_ARGUMENT, LanesError
from lanes.models.base import MODEL_INVALID, Device, Model
from lanes.serving import bridge
from lanes.serving.config import ServeConfig
from lanes.serving.default_policy import resolve_policy
from lanes.serving.devices import cuda_counter, resolve_devices
from lanes.serving.memory import Creep, give_memory_back
from lanes.serving.warmup import Warmed, warm_up

LOADING, WARMING, READY, DRAINING, STOPPED = "loading", "warming", "ready", "draining", "stopped"
"""The phases of a server, in order (``Server.state``)."""
INDEPENDENT = "independent"
IO_THREADS = 2
"""The native runtime's I/O threads (front ends and the driver task)."""
log = logging.getLogger("lanes.serve")
access = logging.getLogger("lanes.access")


def load_models(config: ServeConfig) -> list[Model]:
    """The models ``config`` names: a repository, or the built-in demo zoo."""
    if config.models is None:
        from lanes.models.zoo import zoo_models

        return list(zoo_models(backend=config.zoo_backend, cuda_graphs=config.cuda_graphs))
    from lanes.models.repository import load_repository

    return load_repository(config.models)


def _overrides(model: Model, name: str, base: type[Model] = Model) -> bool:
    """Whether ``model``'s class replaces ``base``'s method ``name``."""
    return getattr(type(model), name) is not getattr(base, name)


def _native_engine(model: Model, devices: Sequence[Device]) -> str | None:
    """How ``model`` runs natively (lanes-onnx, no Python per request), or None (in Python).

    On CPU or simulated devices: ``onnx`` for the ``onnx`` adapter's model as it is (no
    subclass) with no ``BYTES`` tensor; ``zoo`` for a demo zoo model on ONNX Runtime as it is
    (its image pre- and post-processing in Rust too: lanes-server's ``zoo``)."""
    from lanes.models.adapters.onnx import OnnxModel
    from lanes.models.zoo import OnnxZooModel

    if not all(d.kind in ("cpu", "sim") for d in devices):
        return None
    if type(model) is OnnxZooModel:
        return "zoo"
    if type(model) is OnnxModel and all(
        t.datatype != "BYTES" for t in [*model.inputs, *model.outputs]
    ):
        return "onnx"
    return None


def _zoo_hooks(model: Model) -> tuple[str, list[str]] | None:
    """``(task, labels)`` for a demo zoo model whose network runs in Python but whose pre- and
    post-processing are the zoo's own (not overridden), so they run in Rust (lanes-server's
    ``zoo`` hooks) and the model pays Python once per batch only; None otherwise."""
    from lanes.models.zoo import ZooModel

    if not isinstance(model, ZooModel) or any(
        _overrides(model, hook, ZooModel) for hook in ("preprocess", "postprocess")
    ):
        return None
    return model.task, list(model.labels)


def _find_onnxruntime_library() -> None:
    """Point ``ORT_DYLIB_PATH`` at the ``onnxruntime`` wheel's library unless it is set (the
    native ONNX runner loads it; see docs/onnx.md)."""
    if os.environ.get("ORT_DYLIB_PATH"):
        return
    spec = importlib.util.find_spec("onnxruntime")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        found = sorted((Path(folder) / "capi").glob("libonnxruntime.so*")) + sorted(
            (Path(folder) / "capi").glob("libonnxruntime*.dylib")
        )
        if found:
            os.environ["ORT_DYLIB_PATH"] = str(found[-1])
            return


class Server:
    """One ``lanes serve`` instance: models on devices behind the KServe v2 API."""

    def __init__(self, config: ServeConfig, models: Sequence[Model]) -> None:
        from lanes import _core

        self.config = config
        self.version = _core.version()
        self._state = LOADING
        self.models = list(models)
        names = [m.name for m in self.models]
        if len(set(names)) != len(names):
            raise LanesError(MODEL_INVALID, f"duplicate model names in {names}")
        if not self.models:
            raise LanesError(MODEL_INVALID, "no models to serve")
        if config.trace is not None:
            check_trace_path(config.trace)
        resolved = resolve_devices(
            config.devices,
            threads=config.cpu_threads,
            independent=config.policy == INDEPENDENT and config.arbiter is None,
            cuda_available=cuda_counter(config.zoo_backend),
        )
        if resolved.note is not None:
            log.info("%s", resolved.note)
        self.devices: list[Device] = list(resolved.devices)
        chosen = resolve_policy(config.policy, self.devices, arbitrated=config.arbiter is not None)
        self._policy_note = chosen.note  # said once the sockets listen (a refusal is one line)
        self.policy = chosen.policy
        """The policy the scheduler runs: ``config.policy`` with ``auto`` resolved."""
        self.batch_threads = [
            chosen.num_batch_threads(m.batching.num_batch_threads) for m in self.models
        ]
        """Each model's batches in flight at once (its ``num_batch_threads``, or more under
        ``auto`` on GPU-like CPU devices)."""
        self.placement: list[list[int]] = []
        for model in self.models:
            eligible = [i for i, d in enumerate(self.devices) if d.kind in model.devices]
            if not eligible:
                kinds = ", ".join(sorted({d.kind for d in self.devices}))
                raise LanesError(
                    MODEL_INVALID,
                    f"model '{model.name}' runs on {list(model.devices)}, "
                    f"but the devices are {kinds}",
                )
            self.placement.append(eligible)
        self.native_models = [
            _native_engine(m, [self.devices[i] for i in where])
            for m, where in zip(self.models, self.placement, strict=True)
        ]
        # Filled by load(); the native runners read them at each batch.
        self.replicas: list[list[Model | None]] = [[None] * len(self.devices) for _ in models]
        self.native: Any = None
        self._logging: threading.Thread | None = None
        self.port = config.port
        self.metrics_port: int | None = None
        self.grpc_port: int | None = None
        self.warmed: list[Warmed] = []
        self.warmup_seconds = 0.0

    @property
    def state(self) -> str:
        return self.native.phase if self.native is not None else self._state

    @property
    def ready(self) -> bool:
        return self.state == READY

    def _spec(self) -> dict[str, Any]:
        """The native server's config (see lanes-py's serve.rs)."""
        models = []
        for model, devices, replicas, native, threads in zip(
            self.models,
            self.placement,
            self.replicas,
            self.native_models,
            self.batch_threads,
            strict=True,
        ):
            b = model.batching
            engine: dict[str, Any] = {
                "engine": "python",
                "model": model,
                "replicas": replicas,
                "hooks": (_overrides(model, "preprocess"), _overrides(model, "postprocess")),
                # Rust may stack the batch itself (lanes-py's stacked rule): no hook and the
                # base class's own batching methods.
                "stacked": not any(
                    _overrides(model, name)
                    for name in ("preprocess", "postprocess", "collate", "split", "rows")
                ),
            }
            zoo = _zoo_hooks(model) if native is None else None
            if zoo is not None:
                engine["zoo"] = zoo
            if native is not None:
                engine = {
                    "engine": native,
                    "path": str(getattr(model, "file" if native == "onnx" else "path")),
                    "threads": [1 if d.kind == "sim" else max(1, d.threads) for d in self.devices],
                    "batches": b.max_batch_size > 0,
                }
            if native == "zoo":
                engine["task"] = model.task  # type: ignore[attr-defined]
                engine["labels"] = list(model.labels)  # type: ignore[attr-defined]
            models.append(
                {
                    "name": model.name,
                    "version": model.version,
                    "platform": model.platform,
                    "inputs": [(t.name, t.datatype, list(t.shape)) for t in model.inputs],
                    "outputs": [(t.name, t.datatype, list(t.shape)) for t in model.outputs],
                    "input_forms": [
                        [(t.name, t.datatype, list(t.shape)) for t in form]
                        for form in model.input_forms
                    ],
                    "batching": (
                        b.max_batch_size,
                        b.batch_timeout_micros,
                        threads,
                        b.max_enqueued_batches,
                    ),
                    "timeout_ms": model.timeout_ms,
                    "devices": devices,
                    "cost": (model.cost.fixed_ms, model.cost.per_item_ms),
                    **engine,
                }
            )
        c = self.config
        return {
            "host": c.host,
            "port": c.port,
            "grpc_port": c.grpc_bind,
            "metrics_port": c.metrics_port,
            "io_threads": IO_THREADS,
            "workers": c.workers,
            "policy": self.policy,
            "arbiter": None if c.arbiter is None else self._arbiter(c.arbiter),
            "devices": [(d.name, d.simulated) for d in self.devices],
            "models": models,
            "bridge": bridge,
            "max_body_bytes": c.max_body_bytes,
            "max_connections": c.max_connections,
            "header_timeout": c.header_timeout,
            "body_timeout": c.body_timeout,
            "max_header_bytes": c.max_header_kb * 1024,
            "grpc_keepalive": c.grpc_keepalive,
            "trace_events": c.trace_events,
            "trace_requests": c.trace_requests,
            "inline_max_us": c.inline_max_us,
            "version": self.version,
            "access_log": c.access_log,
            "deadline_rule": c.deadline_rule,
        }

    def _arbiter(self, address: str) -> tuple[str, str, str]:
        """The native link's (socket path, fallback, service name) for ``--arbiter``."""
        return (
            address.removeprefix("unix:"),
            self.config.arbiter_fallback,
            f"lanes-serve:{os.getpid()}",
        )

    def queued_rows(self, model: str) -> int:
        """Rows of ``model`` waiting in its queue (as the driver last published them)."""
        index = next(i for i, m in enumerate(self.models) if m.name == model)
        return int(self.native.queued_rows(index)) if self.native is not None else 0

    def listen(self) -> None:
        """Open the sockets (phase ``loading``: live, not ready)."""
        from lanes import _core

        if any(self.native_models):
            _find_onnxruntime_library()
        self.native = _core.NativeServer(self._spec())
        self.port = self.native.port
        self.metrics_port = self.native.metrics_port
        self.grpc_port = self.native.grpc_port
        self._logging = threading.Thread(
            target=self._write_logs, args=(self.native,), name="lanes-serve-logs", daemon=True
        )
        self._logging.start()
        if self._policy_note is not None:
            log.info("%s", self._policy_note)
        log.info("listening on %s (%s)", self.url, self.state)

    def _write_logs(self, native: Any) -> None:
        """The native server's request records as log lines: a warning for each 500 (a model
        failure), and with ``access_log`` one ``lanes.access`` line per request; and its notices
        (the arbiter link's: daemon unreachable, back, lost, refusals); and gives freed memory
        back when lanes.serving.memory's rules say so. Runs until the server stops, then
        writes what is left."""
        creep = Creep(start=time.monotonic())
        while True:
            stopped = native.phase == STOPPED
            records, dropped = native.logs(256, 0.2)
            for warning, notice in native.notices():
                log.log(logging.WARNING if warning else logging.INFO, "%s", notice)
            why = "connections closed" if native.trim_due() else None
            if why is None and creep.due(time.monotonic()):
                why = "resident memory crept"
            if why is not None and give_memory_back(why):
                creep.trimmed()
            for method, path, status, duration_ms, model, message in records:
                if status == 500:
                    log.warning(
                        "%s %s answered %d: %s",
                        method,
                        path,
                        status,
                        message,
                        extra={"status": status, "model": model},
                    )
                if self.config.access_log:
                    access.info(
                        "%s %s %d",
                        method,
                        path,
                        status,
                        extra={
                            "method": method,
                            "path": path,
                            "status": status,
                            "duration_ms": round(duration_ms, 3),
                            "model": model,
                        },
                    )
            if stopped and not records:
                if dropped:
                    log.warning("dropped %d request log records (the log queue was full)", dropped)
                return

    def load(self) -> None:
        """Place a replica of every model on every eligible device (blocking)."""
        for model, devices, replicas, native in zip(
            self.models, self.placement, self.replicas, self.native_models, strict=True
        ):
            if native:  # loaded by the native runner when the server was built
                continue
            for i in devices:
                replicas[i] = model.replica(self.devices[i])

    def prepare(self) -> None:
        """``loading`` → ``warming`` → ``ready``; a failure stops the server and is raised."""
        try:
            self.load()
            self.native.set_phase(WARMING)
            t0 = time.perf_counter()
            self.warmed = warm_up(
                self.models,
                self.replicas,
                self.devices,
                self.config.warmup_batches,
                native={i for i, n in enumerate(self.native_models) if n},
                warm=self.native.warm,
                on_executors=self.native.on_executors,
            )
            self.warmup_seconds = time.perf_counter() - t0
            index = {m.name: i for i, m in enumerate(self.models)}
            sim = {d.name for d in self.devices if d.simulated}
            for w in self.warmed:
                if w.device not in sim:  # a simulated device's time is the modelled cost
                    for rows, ns in w.last_ns.items():
                        self.native.observe(index[w.model], rows, ns)
        except BaseException:
            self.stop()
            raise
        if self.state == WARMING:  # not drained meanwhile
            self.native.set_phase(READY)
            log.info("ready: warm-up took %.2f s", self.warmup_seconds)

    def start(self) -> None:
        """Open the sockets, then load and warm up; returns once ready (stopped on failure)."""
        self.listen()
        self.prepare()

    @property
    def _cut_message(self) -> str:
        return f"draining: not finished within the drain timeout ({self.config.drain_timeout} s)"

    def drain(self, timeout: float) -> None:
        """``draining``: not ready, listeners closed, up to ``timeout`` s for the requests in
        flight; then queued and running requests left answer 503. Returns when none is left."""
        if self.native is None or self.state in (DRAINING, STOPPED):
            return
        log.info("draining: up to %g s", timeout)
        t0 = time.perf_counter()
        cut = self.native.drain(timeout, self._cut_message)
        if cut is not None:
            log.warning("drain timeout: %d requests answered 503", cut)
        log.info("drained in %.2f s", time.perf_counter() - t0)

    def stop(self) -> None:
        """``stopped``: close connections and the listeners, release every thread."""
        if self.native is None:
            self._state = STOPPED
            return
        if self.state == STOPPED:
            return
        if self.config.trace is not None:
            try:
                self.native.write_trace(str(self.config.trace))
            except LanesError as err:
                log.warning("trace not written: %s", err.message)
        self.native.stop()
        if self._logging is not None:
            self._logging.join(timeout=5)

    @property
    def url(self) -> str:
        return f"http://{self.config.host}:{self.port}"


def serve(config: ServeConfig, models: Sequence[Model] | None = None, announce: Any = None) -> None:
    """Serve until SIGINT or SIGTERM, then drain (see the module docstring), logging through
    :class:`lanes.serving.logs.Logs` as ``config`` says."""
    from lanes.serving.logs import Logs

    logs = Logs(config.log_format, config.log_level, config.access_log)
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        sig = signal.Signals(signum)
        if stop.is_set():
            sys.stderr.write(f"lanes serve: second {sig.name}: exiting at once\n")
            sys.stderr.flush()
            os._exit(128 + sig.value)
        log.info("%s: draining (a second signal exits at once)", sig.name)
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    server: Server | None = None
    try:
        server = Server(config, load_models(config) if models is None else models)
        server.listen()
        failure: list[BaseException] = []

        def boot() -> None:
            try:
                server.prepare()
            except BaseException as err:
                failure.append(err)
            finally:
                booted.set()

        booted = threading.Event()
        threading.Thread(target=boot, name="lanes-serve-boot", daemon=True).start()
        while not (booted.is_set() or stop.is_set()):
            stop.wait(0.05)
        if failure:
            raise failure[0]
        if not stop.is_set():
            (announce or (lambda s: None))(server)
            while not stop.wait(0.25):
                pass
            # The drain waits in native code; the main thread stays in Python meanwhile so that
            # a second signal is handled (exits at once).
            draining = threading.Thread(
                target=server.drain, args=(config.drain_timeout,), name="lanes-drain", daemon=True
            )
            draining.start()
            while draining.is_alive():
                draining.join(0.05)
    finally:
        if server is not None:
            server.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
        logs.close()


def check_trace_path(path: Path) -> None:
    """Refuse a ``--trace`` file whose folder does not exist (checked at start, not at exit)."""
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise LanesError(
            BAD_ARGUMENT, f"trace = '{path}': folder '{folder}' does not exist (see --trace)"
        )


@dataclass
class Handle:
    """A server running on its own threads (from :func:`start_in_thread`)."""

    server: Server
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
        if drain_timeout is not None:
            self.server.drain(drain_timeout)
        self.server.stop()
        self.thread.join(timeout=10)

    def __enter__(self) -> Handle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_in_thread(
    config: ServeConfig, models: Sequence[Model] | None = None, wait_ready: bool = True
) -> Handle:
    """Start a server and return once it is ready (errors re-raised here).

    With ``wait_ready=False`` it returns as soon as the sockets listen (phase ``loading``);
    :meth:`Handle.wait_ready` then waits for ready and raises a failed start-up.
    """
    server = Server(config, load_models(config) if models is None else models)
    server.listen()
    handle = Handle(server, threading.Thread())

    def boot() -> None:
        try:
            server.prepare()
        except BaseException as err:
            handle.failure.append(err)
        finally:
            handle.booted.set()

    handle.thread = threading.Thread(target=boot, name="lanes-serve", daemon=True)
    handle.thread.start()
    if wait_ready:
        handle.booted.wait()
        if handle.failure:
            handle.thread.join(timeout=10)
            raise handle.failure[0]
    return handle
