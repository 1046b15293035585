"""Typed face of the native module ``lanes._core`` (crates/lanes-py), checked against the build
by ``python -m mypy.stubtest lanes._core``.

Errors are raised as :class:`lanes.errors.LanesError` with a stable ``code``
(e.g. ``"unknown_policy"``, ``"bad_policy_argument"``). Scenario dicts are the normalised form
produced by :meth:`lanes.sim.Scenario.to_core`; result dicts are described in docs/sim.md.
"""

from collections.abc import Callable
from typing import Any, TypeVar, final

_T = TypeVar("_T")

__all__ = [
    "ArbiterRun",
    "LoadRun",
    "NativeServer",
    "ProbeRun",
    "Scheduler",
    "arbiter_start",
    "capacity",
    "collapse_perf",
    "flamegraph_svg",
    "load_merge",
    "load_percentiles",
    "load_start",
    "pack_numbers",
    "parse_policy",
    "policy_names",
    "probe_start",
    "simulate",
    "simulate_timeline",
    "version",
]

def version() -> str:
    """The version of the native module (the Cargo workspace version)."""

def policy_names() -> list[str]:
    """Policy names for help texts, e.g. ``["independent", "semaphore", "fifo", "limit:K"]``."""

def parse_policy(name: str) -> str:
    """The canonical form of a policy name; raises ``LanesError("unknown_policy", ...)``."""

def simulate(
    scenario: dict[str, Any],
    points: list[tuple[str, float, int]],
    requests: int,
    threads: int = 0,
) -> list[dict[str, Any]]:
    """Simulate every ``(policy, load, seed)`` point, in parallel on ``threads`` threads
    (0: all cores); one result dict per point, in the same order."""

def simulate_timeline(
    scenario: dict[str, Any],
    policy: str,
    load: float,
    seed: int,
    requests: int,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One ``(policy, load, seed)`` point as :func:`simulate` gives it, and every batch's span on
    its device (``service``, ``device``, ``size``, ``oldest_ms``, ``start_ms``, ``called_ms``,
    ``end_ms``, ``cost_ms``, ``measured``; ms from the first arrival), in the order the batches
    ended."""

def capacity(
    scenario: dict[str, Any],
    policy: str,
    seeds: list[int],
    requests: int,
    threads: int = 0,
) -> dict[str, float]:
    """``{"overall": load, "every_service": load}``: the highest load in (0, 1] at which at
    least 99 % of requests (overall; of every service) finish within their SLO, found by
    bisection to 0.01; each probed load is simulated once per seed."""

@final
class LoadRun:
    """A load run in progress, from :func:`load_start`."""

    def progress(self) -> dict[str, Any]:
        """``{"elapsed_s", "sent", "replies", "errors", "finished"}``."""

    def stop(self) -> None:
        """End the run now; requests in flight are abandoned."""

    def wait(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` seconds (GIL released); true once the run has ended."""

    def result(self) -> str:
        """The result as JSON text (waits for the end; writes the send log if asked)."""

def load_start(spec: dict[str, Any]) -> LoadRun:
    """Check a run spec (see lanes.bench.engine.spec), open the connections, start the run.
    Raises ``LanesError`` (``bad_url``, ``bad_argument``, ``corpus_invalid``,
    ``connect_failed``) before any request is sent."""

def load_merge(results: list[str]) -> str:
    """Merge JSON results of side-by-side runs into one JSON result (histograms add exactly)."""

def load_percentiles(result: str, which: str) -> str:
    """HdrHistogram percentile-distribution text of ``latency`` or ``service_time`` (ms)."""

@final
class Scheduler:
    """The policy engine of one host with its online cost estimates (crates/lanes-policy).

    Time is passed in (``now_ns``, e.g. ``time.monotonic_ns()``); the engine never reads a clock.
    A job is one batch of one model; model ids, job ids and device ids are the caller's integers.
    """

    def __new__(
        cls,
        policy: str,
        capacities: list[int],
        default_cost_ns: int = 1_000_000,
        ewma_weight: float = 0.1,
    ) -> Scheduler:
        """``policy``: ``fifo``, ``limit:K``, ``sjf[:alpha=A,slack=MS|off,starve=MS|off]``,
        ``fair[:alpha=A,slack=MS|off,threshold=MS,cap=MS,usage=MS|off,fast=MS|off,...]``,
        ``lanes[:alpha=A,slack=MS|off,fast=MS,hold=MS,budget=MS|off,burst=MS|off,width=K,beside=long|any]``
        (``sjf`` plus ``width`` fast slots per device for jobs of estimated cost at most
        ``fast``, optionally gated) or ``edf``;
        ``capacities``: jobs each device runs at once (device ids are the indices).
        Raises ``LanesError`` (``unknown_policy``, ``bad_policy_argument``, ``bad_device_count``,
        ``bad_capacity``, ``bad_argument``)."""

    @property
    def policy(self) -> str:
        """The canonical policy name."""

    @property
    def device_count(self) -> int: ...
    @property
    def queued(self) -> int:
        """Jobs waiting for a device."""

    @property
    def running(self) -> int:
        """Jobs running on any device."""

    def running_on(self, device: int) -> int:
        """Jobs running on ``device``."""

    def busy_ns(self, device: int, now_ns: int) -> int:
        """Time ``device`` has had at least one job running, as of ``now_ns``."""

    def set_prior(self, model: int, fixed_ns: float, per_item_ns: float) -> None:
        """The configured cost curve of ``model``: ``fixed_ns + per_item_ns * batch``."""

    def observe(self, model: int, batch: int, run_ns: int) -> None:
        """Record a measured run time of a batch of ``batch`` items."""

    def estimate(self, model: int, batch: int) -> int:
        """The current run-time estimate (ns) of a batch of ``batch`` items."""

    def submit(
        self,
        job: int,
        model: int,
        batch: int,
        arrival_ns: int,
        devices: list[int] | None = None,
        deadline_ns: int | None = None,
        target_ns: int | None = None,
        cost_ns: int | None = None,
    ) -> int:
        """Queue a job; returns the cost it was queued with (``cost_ns`` or the estimate).
        Raises ``LanesError`` (``duplicate_job``, ``no_eligible_device``, ``bad_argument``)."""

    def cancel(self, job: int) -> bool:
        """Remove a queued job; false if it is not queued."""

    def dispatch(self, now_ns: int) -> list[tuple[str, int, int | str]]:
        """Decisions at ``now_ns``: ``("drop", job, reason)`` then ``("run", job, device)``."""

    def next_wake(self) -> int | None:
        """When a short job the fast lane's gate held back at the last ``dispatch`` is admitted
        with no other event (call ``dispatch`` then); None when none was held back."""

    def complete(self, job: int, now_ns: int) -> tuple[int, int]:
        """Mark a running job finished; returns ``(device, held_ns)``. Raises ``not_running``."""

@final
class ProbeRun:
    """A probe run in progress (crates/lanes-probe), from :func:`probe_start`."""

    def poll(self, timeout_s: float, limit: int = 100000) -> list[dict[str, Any]] | None:
        """Wait up to ``timeout_s`` (GIL released) for a message, then take every one waiting
        (at most ``limit``), in order: dicts with ``kind`` ``"event"`` (``target``, ``name``,
        ``state``, ``previous``, ``at``, ``round``), ``"notice"`` (``level``, ``message``) or
        ``"round"`` (the round report). ``None`` once the run has ended and all were read."""

    def reload(self) -> None:
        """Reload the targets file before the next round."""

    def stop(self) -> None:
        """Stop probing at once."""

    def wait(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` seconds (GIL released); true once the run has ended."""

    def result(self) -> None:
        """Wait for the end; raise ``LanesError`` if the run failed (``socket_failed``)."""

    @property
    def mode(self) -> str:
        """``"syn"``, or ``"connect"`` (asked for, or after a fallback)."""

    @property
    def metrics_address(self) -> tuple[str, int] | None:
        """``(host, port)`` of the metrics endpoint, if one was asked for."""

    def metrics(self) -> str:
        """The metrics as OpenMetrics text."""

def probe_start(spec: dict[str, Any]) -> ProbeRun:
    """Check a probe spec (see lanes.probe.spec), load the targets, open the sockets and start
    probing. Raises ``LanesError`` (``bad_argument``, ``targets_invalid``, ``io_error``,
    ``socket_failed``, ``metrics_bind_failed``) before any probe is sent."""

@final
class ArbiterRun:
    """A running arbiter daemon (crates/lanes-arbiter), from :func:`arbiter_start`."""

    def notice(self, timeout_s: float) -> str | None:
        """The next log line (stale socket replaced, grant held past the limit, protocol error,
        timeline written), waiting up to ``timeout_s`` (GIL released); ``None`` if none came."""

    def stop(self) -> None:
        """Start the shutdown: queued acquires are answered REJECT(shutting_down), the socket is
        removed, connections close; the timeline is written at the end."""

    def wait(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` seconds (GIL released); true once the run has ended."""

    def result(self) -> None:
        """Wait for the end; raise ``LanesError`` if the run failed (``output_failed``)."""

    def metrics(self) -> str | None:
        """The metrics as OpenMetrics text; ``None`` once stopped."""

    def stats(self) -> str | None:
        """The STATS_REPLY JSON document; ``None`` once stopped."""

    @property
    def metrics_address(self) -> tuple[str, int] | None:
        """``(host, port)`` of the metrics endpoint, if one was asked for."""

def arbiter_start(spec: dict[str, Any]) -> ArbiterRun:
    """Check an arbiter spec (keys of ``lanes_arbiter::ArbiterSpec``: ``socket``, ``devices``,
    ``capacity``, ``policy``, ``max_hold_ms``, ``revoke``, ``queue_limit``, ``mode``, ``uid``,
    ``gid``, ``metrics``, ``trace``, ``trace_events``, ``threads``), create the socket and start
    serving. Raises ``LanesError`` (``bad_argument``, ``socket_in_use``, ``socket_failed``,
    ``metrics_bind_failed``) before any client can connect."""

def flamegraph_svg(
    folded: str,
    *,
    title: str,
    count_name: str = "samples",
    colors: str = "hot",
    reverse: bool = False,
) -> str:
    """Render folded stacks (``frame;frame;frame COUNT`` lines, root first, as py-spy's ``raw``
    format and :func:`collapse_perf` write them) as an SVG flame graph with inferno, without the
    GIL. Blank lines, ``# `` comments and bare counts (py-spy's samples with no frame) are
    skipped. ``count_name`` names the unit in the tooltips; ``colors`` is an inferno palette
    (``hot``, ``mem``, ``io``, ``wakeup``, ``java``, ``js``, ``perl``, ``python``, ``rust``,
    ``red``, ``green``, ``blue``, ``aqua``, ``yellow``, ``purple``, ``orange``), coloured by a
    hash of the frame name so one input always gives one picture; ``reverse`` draws leaf-first
    (an icicle of callers). Raises ``ValueError`` for an input with no stacks or whose counts
    are all 0, for a line with no whole-number count (the message names the line number), and
    for an unknown palette."""

def collapse_perf(perf_script: str) -> str:
    """Fold the text of ``perf script`` (a ``perf record -g`` recording) into stacks, one
    ``comm;frame;...;leaf COUNT`` line each (inferno's collapse-perf), without the GIL. The count
    is the sum of the events' periods where ``perf script`` prints them (for ``cpu-clock``:
    nanoseconds), else the number of samples. Raises ``ValueError`` for an empty input or one in
    which no stack was found."""

def pack_numbers(data: list[Any]) -> tuple[bytes, str, tuple[int, ...]] | None:
    """The array ``np.asarray(data)`` makes of a flat or rectangular nested list whose leaves
    are all ``float`` or ``int`` (exact types, as orjson makes them; not ``bool``), as
    ``(bytes, "f8" | "i8", shape)``: little-endian float64 when any leaf is a float (ints
    converted round-to-nearest-even, as numpy does), else int64. None for anything else (a
    boolean, string, null or object leaf, an int past int64, ragged or empty nesting, more than
    32 levels): numpy then decides."""

@final
class NativeServer:
    """``lanes serve``'s data plane (lanes-server) on its own threads; Python drives its
    lifecycle (:mod:`lanes.serving.server`). ``config`` keys: ``host``, ``port``, ``grpc_port``,
    ``metrics_port`` (None: off), ``io_threads``, ``workers``, ``policy``, ``devices``
    (``[(name, simulated)]``), ``models`` (dicts: ``name``, ``version``, ``platform``,
    ``inputs``/``outputs`` as ``[(name, datatype, shape)]``, ``input_forms`` (lists of such),
    ``batching`` as ``(max_batch_size, batch_timeout_micros, num_batch_threads,
    max_enqueued_batches)``, ``timeout_ms``,
    ``devices`` (indexes), ``cost`` as ``(fixed_ms, per_item_ms)``, ``engine`` (``python``: with
    ``model``, ``replicas`` — a list filled while loading — and ``hooks`` as ``(preprocess,
    postprocess)``; ``onnx``: with ``path`` and per-device ``threads``)), ``bridge`` (the module
    :mod:`lanes.serving.bridge`), ``max_body_bytes``, the connection limits ``max_connections``,
    ``header_timeout``, ``body_timeout`` (seconds), ``max_header_bytes`` and ``grpc_keepalive``
    (seconds), ``trace_events``, ``inline_max_us`` (the driver's inline bound, µs; 0: never),
    ``version``, ``access_log``, ``deadline_rule`` (``start`` or ``finish``). Binds every
    listener at once (phase ``loading``); ``LanesError`` when one cannot be bound."""

    def __new__(cls, config: dict[str, Any]) -> NativeServer: ...
    @property
    def port(self) -> int: ...
    @property
    def grpc_port(self) -> int | None: ...
    @property
    def metrics_port(self) -> int | None: ...
    @property
    def phase(self) -> str:
        """``loading``, ``warming``, ``ready``, ``draining`` or ``stopped``."""
    def set_phase(self, phase: str) -> None: ...
    def observe(self, model: int, rows: int, ns: int) -> None:
        """Seeds the scheduler's estimate: a batch of ``rows`` of model ``model`` took ``ns``."""
    def warm(self, model: int, device: int, rows: int) -> int | None:
        """Warm-up of a native model: one batch of ``rows`` zeros on ``device``, on the calling
        thread; its nanoseconds, or None for a model warmed by its Python replicas."""
    def on_executors(self, device: int, call: Callable[[], _T]) -> list[_T]:
        """Calls ``call()`` once on each executor thread of ``device`` (the GIL held only for
        the call) and returns each thread's result; the first exception raised is raised here.
        Empty once the server stopped. Not from an executor thread."""
    def queued_rows(self, model: int) -> int:
        """Rows of model ``model`` (its index) queued, as the driver last published them."""
    def drain(self, timeout: float, message: str) -> int | None:
        """Drains: None when everything finished within ``timeout`` s, else how many requests
        were cut (answered 503 with ``message``)."""
    def stop(self) -> None: ...
    def write_trace(self, path: str) -> None:
        """Writes the timeline (Chrome trace-event JSON) to ``path``."""
    def trim_due(self) -> bool:
        """True once after the process's open connections fell sharply (at least 1,000 closed,
        to at most half their high-water mark): time to give freed memory back."""
    def notices(self) -> list[tuple[bool, str]]:
        """The server's notices for the logs since the last call, ``(warning, message)``,
        oldest first: the arbiter link's (daemon unreachable, connected, back, lost; refusals
        other than a missed deadline)."""
    def logs(
        self, max: int, wait: float
    ) -> tuple[list[tuple[str, str, int, float, str | None, str]], int]:
        """Up to ``max`` request log records ``(method, path, status, duration_ms, model,
        error)``, waiting up to ``wait`` s for the first; and the records dropped so far."""
