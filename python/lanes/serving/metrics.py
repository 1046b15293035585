"""Prometheus metrics of ``lanes serve`` (names and labels: docs/metrics.md, a contract).

One :class:`ServeMetrics` per server, on its own ``CollectorRegistry`` (several servers share a
test process), served by prometheus_client's WSGI server on ``host:metrics_port`` in a thread of
its own. The serving path only does cheap updates: counters and histograms are prometheus_client
children cached per model (a lock and an add), fed through the model's :class:`ModelStats` (its
durations observe into the histograms, its outcomes and batches into the counters). Everything
else is read at scrape time from plain values the event loop keeps:

- queue depth from the model's queue (an int);
- cost estimates from ``Served.estimates``, a snapshot the dispatcher replaces after each
  measured batch. The scrape thread never calls the engine (``lanes._core.Scheduler`` is used by
  the event loop with the GIL released inside calls; a second thread could hit a borrow error);
- device accounts from :mod:`lanes.serving.occupancy` (immutable tallies);
- host CPU time from ``/proc/stat`` (as node_exporter's ``node_cpu_seconds_total``; absent on
  systems without it), plus prometheus_client's process collector.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
    make_wsgi_app,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import ThreadingWSGIServer
from prometheus_client.registry import Collector

from lanes.errors import BAD_ARGUMENT, LanesError
from lanes.models.base import Model
from lanes.serving.stats import OUTCOMES
from lanes.serving.timeline import Timeline, check_trace_path

if TYPE_CHECKING:
    from lanes.serving.config import ServeConfig
    from lanes.serving.dispatcher import Dispatcher, Served

DURATION_BUCKETS = (
    50e-6, 100e-6, 250e-6, 500e-6,
    1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3,
    1.0, 2.5, 5.0, 10.0,
)  # fmt: skip
"""Seconds: 50 µs .. 10 s, about three buckets a decade (+Inf is added)."""
CPU_MODES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
"""``/proc/stat`` columns, in order, as ``lanes_host_cpu_seconds_total{mode}``."""
PROC_STAT = "/proc/stat"
POLL_S = 0.05
"""How often the metrics thread checks for shutdown (bounds ``stop()``'s wait)."""


def powers_of_two(top: int) -> list[int]:
    """1, 2, 4, ... up to ``top`` (``top`` itself last when it is not a power of two)."""
    sizes = [1]
    while sizes[-1] * 2 <= top:
        sizes.append(sizes[-1] * 2)
    if sizes[-1] != top and top > 1:
        sizes.append(top)
    return sizes


class ModelMetrics:
    """One model's cached metric children; the sink its :class:`ModelStats` feeds."""

    def __init__(self, m: ServeMetrics, name: str) -> None:
        self.outcomes = {o: m.requests.labels(model=name, outcome=o) for o in OUTCOMES}
        self.request = m.request_duration.labels(model=name)
        self.queue = m.queue_duration.labels(model=name)
        self.preprocess = m.preprocess_duration.labels(model=name)
        self.device = m.device_duration.labels(model=name)
        self.postprocess = m.postprocess_duration.labels(model=name)
        self.batch_size = m.batch_size.labels(model=name)

    def outcome(self, outcome: str) -> None:
        self.outcomes[outcome].inc()

    def batch(self, rows: int, infer_ns: int) -> None:
        self.device.observe(infer_ns / 1e9)
        self.batch_size.observe(rows)


class ServeMetrics:
    """The metrics of one server (see the module docs)."""

    def __init__(self, dispatcher: Dispatcher, *, version: str, models: Sequence[Model]) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        ProcessCollector(registry=r)
        self.requests = Counter(
            "lanes_requests", "Requests by outcome.", ["model", "outcome"], registry=r
        )

        def seconds(name: str, what: str) -> Histogram:
            return Histogram(name, what, ["model"], buckets=DURATION_BUCKETS, registry=r)

        self.request_duration = seconds(
            "lanes_request_duration_seconds", "End-to-end time of successful requests."
        )
        self.queue_duration = seconds(
            "lanes_queue_duration_seconds", "Time from enqueue to the batch's dispatch."
        )
        self.preprocess_duration = seconds(
            "lanes_preprocess_duration_seconds", "Pre-processing time per request."
        )
        self.device_duration = seconds(
            "lanes_device_duration_seconds", "Device time per executed batch."
        )
        self.postprocess_duration = seconds(
            "lanes_postprocess_duration_seconds", "Post-processing time per request."
        )
        top = max([1, *(m.batching.max_batch_size for m in models)])
        self.batch_size = Histogram(
            "lanes_batch_size",
            "Rows per executed batch.",
            ["model"],
            buckets=[float(b) for b in powers_of_two(top)],
            registry=r,
        )
        info = Gauge(
            "lanes_info", "The server: version and policy.", ["version", "policy"], registry=r
        )
        info.labels(version=version, policy=dispatcher.policy).set(1)
        r.register(HostCpuCollector())
        r.register(DispatchCollector(dispatcher))
        self.models = {m.name: ModelMetrics(self, m.name) for m in models}
        self._httpd: ThreadingWSGIServer | None = None
        self._thread: threading.Thread | None = None

    def bind(self, s: Served) -> None:
        """Feed from a served model's statistics (called as the dispatcher adds it)."""
        m = self.models[s.model.name]
        s.stats.sink = m
        s.stats.success.observe = m.request.observe
        s.stats.queue.observe = m.queue.observe
        s.stats.compute_input.observe = m.preprocess.observe
        s.stats.compute_output.observe = m.postprocess.observe

    def text(self) -> bytes:
        """The exposition text, as a scrape would get it."""
        return generate_latest(self.registry)

    async def start(self, host: str, port: int) -> int:
        """Serve ``/metrics`` on ``host:port`` (0: any free port) in a thread; the bound port."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, self._start, host, port)

    def _start(self, host: str, port: int) -> int:
        try:
            httpd = make_server(
                host,
                port,
                make_wsgi_app(self.registry),
                _Server,
                handler_class=_QuietHandler,
            )
        except OSError as err:
            raise LanesError(
                BAD_ARGUMENT,
                f"cannot serve metrics on {host}:{port}: {err.strerror or err} "
                "(see --metrics-port; off: --metrics-port off)",
            ) from None
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": POLL_S}, name="lanes-metrics"
        )
        self._thread.daemon = True
        self._thread.start()
        return int(httpd.server_port)

    async def close(self) -> None:
        """Stop serving ``/metrics`` (off the event loop: it waits up to ``POLL_S``)."""
        await asyncio.get_running_loop().run_in_executor(None, self.stop)

    def stop(self) -> None:
        """Stop serving (blocks up to ``POLL_S``)."""
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None


class _Server(ThreadingWSGIServer):
    """prometheus_client's threading WSGI server, on IPv4 or IPv6 as the host asks."""

    def __init__(self, address: tuple[str, int], handler: Callable[..., object]) -> None:
        import socket

        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, handler)  # type: ignore[arg-type]


class _QuietHandler(WSGIRequestHandler):
    """No access log lines on stderr (a scrape every few seconds would fill it)."""

    def log_message(self, format: str, *args: object) -> None:
        pass


class DispatchCollector(Collector):
    """Device accounts and cost estimates, read from the dispatcher's snapshots."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher

    def collect(self) -> Iterator[Metric]:
        d = self.dispatcher
        busy = CounterMetricFamily(
            "lanes_device_busy_seconds",
            "Time with at least one job on the device.",
            labels=["device"],
        )
        jobs = CounterMetricFamily("lanes_device_jobs", "Jobs completed.", labels=["device"])
        idle = CounterMetricFamily(
            "lanes_device_idle_while_waiting_seconds",
            "Time the device had a free slot while a ready job eligible for it waited.",
            labels=["device"],
        )
        overlap = CounterMetricFamily(
            "lanes_device_overlap_seconds",
            "Time with more than one job on the device.",
            labels=["device"],
        )
        for account in d.occupancy.devices:
            t = account.read()
            busy.add_metric([account.name], t.busy_s)
            jobs.add_metric([account.name], t.jobs)
            idle.add_metric([account.name], t.idle_wait_s)
            overlap.add_metric([account.name], t.overlap_s)
        yield from (busy, jobs, idle, overlap)
        depth = GaugeMetricFamily("lanes_queue_depth", "Rows queued now.", labels=["model"])
        for name, s in list(d.models.items()):
            depth.add_metric([name], s.queue.rows)
        yield depth
        cost = GaugeMetricFamily(
            "lanes_cost_estimate_seconds",
            "The engine's current estimated run time of a batch.",
            labels=["model", "batch_size"],
        )
        for name, s in list(d.models.items()):
            for size, ns in s.estimates:
                cost.add_metric([name, str(size)], ns / 1e9)
        yield cost


class HostCpuCollector(Collector):
    """``lanes_host_cpu_seconds_total{cpu,mode}`` from ``/proc/stat`` at scrape time."""

    def __init__(self, path: str = PROC_STAT) -> None:
        self.path = path
        self.tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def collect(self) -> Iterator[Metric]:
        try:
            with open(self.path) as f:
                lines = f.readlines()
        except OSError:
            return  # not Linux: the family is absent
        family = CounterMetricFamily(
            "lanes_host_cpu_seconds", "Host CPU time per core and mode.", labels=["cpu", "mode"]
        )
        for line in lines:
            fields = line.split()
            if not fields or not fields[0].startswith("cpu") or fields[0] == "cpu":
                continue
            cpu = fields[0][3:]
            for mode, value in zip(CPU_MODES, fields[1:], strict=False):
                family.add_metric([cpu, mode], int(value) / self.tick)
        yield family


def instrument(
    dispatcher: Dispatcher, config: ServeConfig, version: str, models: Sequence[Model]
) -> tuple[ServeMetrics, Timeline]:
    """The metrics and the timeline of a server, fed by ``dispatcher`` (``--trace`` checked)."""
    if config.trace is not None:
        check_trace_path(config.trace)
    metrics = ServeMetrics(dispatcher, version=version, models=models)
    dispatcher.on_add = metrics.bind
    timeline = Timeline(
        config.trace_events,
        [r.device.name for r in dispatcher.runners],
        {"version": version, "policy": dispatcher.policy},
    )
    dispatcher.timeline = timeline
    return metrics, timeline
