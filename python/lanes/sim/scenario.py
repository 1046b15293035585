"""Scenarios: the host and services a simulation runs, read from a TOML file.

Parse, don't validate: :meth:`Scenario.load` turns a file (or a built-in name such as ``ocr``)
into frozen dataclasses whose every field is already checked, and :meth:`Scenario.to_core` gives
the normalised dict the native simulator takes. Every refusal is a one-line
``LanesError("scenario_invalid" | "scenario_not_found", ...)`` naming the dotted key
(``service[1].gpu.cv``, services counted from 0), the value and what is allowed. The format,
key by key, is in docs/sim.md; examples/scenarios/ holds commented examples.

Rules worth stating here: unknown keys are errors; service names are unique; shares are each
> 0 and must sum to 1 (within 1e-6; they are then rescaled to sum to exactly 1); a phase with
``mean_ms = 0`` becomes a constant 0; trace paths are relative to the scenario file.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from lanes.errors import SCENARIO_INVALID, SCENARIO_NOT_FOUND, LanesError
from lanes.sim.fields import Table
from lanes.sim.trace import TraceFormatError, parse_trace

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

Dist = Literal["lognormal", "exponential", "constant"]
DISTS: tuple[Dist, ...] = ("lognormal", "exponential", "constant")
ARRIVALS = ("poisson", "bursty", "trace")
PHASES = ("pre", "gpu", "post")

MAX_CV = 10.0
SHARE_TOLERANCE = 1e-6
_BUILTIN_DIR = Path(__file__).with_name("scenarios")

_TOP_KEYS = ("name", "description", "slo_ms", "host", "service")
_HOST_KEYS = (
    "gpus", "cpu_cores", "gpu_capacity", "semaphore", "eta", "gpu_queue", "shared_cores",
    "busy_cores",
    "interpreter", "time_slicing", "handoff_ms", "handoff_dist", "slice_ms", "device_hold_ms",
    "call_preempt_per_ms", "call_preempt_ms", "device_hold_busy_ms", "pre_wake_ms",
    "post_wake_ms", "client_ms", "call_stretch", "pre_wake_busy_ms", "post_wake_busy_ms",
    "run_queues", "call_stretch_weighted", "call_on_core", "speed_cv", "speed_ms",
    "lag_ms", "lag_among_calls", "call_preempt_absorbed", "speed_series", "speed_series_ms",
    "call_stretch_capped", "speed_run_cv", "busy_run_cores", "speed_cv_busy",
    "speed_busy_exponent", "wake_spell_ms", "wake_spell_share", "stop_ms", "stops_per_s",
    "stop_run_per_s", "deadline_rule",
)  # fmt: skip
_INTERPRETER_KEYS = ("batch_ms", "handoff_ms", "convoy_ms")
_SERVICE_KEYS = (
    "name", "share", "workers_per_gpu", "arrival", "pre", "gpu", "post", "slo_ms", "deadline_ms",
    "batching", "client_connections",
)  # fmt: skip
_COST_KEYS = ("dist", "mean_ms", "cv")
_BATCHING_KEYS = ("max_batch_size", "batch_timeout_micros", "num_batch_threads", "batch_ms")
_BATCHING_NEEDS = "must be a table: { max_batch_size = 16, batch_timeout_micros = 0, ... }"
_COST_NEEDS = "must be a table like { mean_ms = 5, cv = 0.3 } (dist, mean_ms, cv)"
_ARRIVAL_NEEDS = (
    'must be "poisson" or a table { kind = "poisson" }, { kind = "bursty", cv = 2.0 } '
    'or { kind = "trace", path = "arrivals.csv" }'
)


@dataclass(frozen=True)
class Cost:
    """The cost distribution of one phase of a request, in milliseconds."""

    dist: Dist
    mean_ms: float
    cv: float
    """Coefficient of variation (std / mean): 1 for exponential, 0 for constant."""

    def to_core(self) -> dict[str, Any]:
        return {"dist": self.dist, "mean_ms": self.mean_ms, "cv": self.cv}


@dataclass(frozen=True)
class Poisson:
    """Poisson arrivals: exponential gaps, coefficient of variation 1."""

    def to_core(self) -> dict[str, Any]:
        return {"kind": "poisson"}


@dataclass(frozen=True)
class Bursty:
    """Gamma-distributed gaps with coefficient of variation ``cv`` (1 is Poisson; above 1,
    burstier; below 1, more regular)."""

    cv: float

    def to_core(self) -> dict[str, Any]:
        return {"kind": "bursty", "cv": self.cv}


@dataclass(frozen=True)
class Trace:
    """Arrivals replayed from a file, rescaled by the simulator to the service's rate."""

    path: Path
    times: tuple[float, ...] = field(repr=False)
    """Seconds since the first arrival, sorted; ``times[0] == 0.0``."""

    def to_core(self) -> dict[str, Any]:
        return {"kind": "trace", "times": list(self.times)}


Arrival = Poisson | Bursty | Trace


@dataclass(frozen=True)
class Host:
    """The shared machine: GPUs, CPU cores and how a GPU behaves under overlap."""

    gpus: int
    cpu_cores: int
    gpu_capacity: int = 1
    """Engine policies: jobs a GPU runs at once."""
    semaphore: int = 1
    """``semaphore`` mode: permits per GPU."""
    eta: tuple[float, ...] = (1.0,)
    """GPU throughput with k overlapping jobs is ``eta[k-1]`` (last value repeats); each of the
    k jobs progresses at ``eta(k) / k``."""
    shared_cores: bool = False
    """The GPUs are cores of the CPU pool (CPU executors): a running batch holds a core."""
    busy_cores: float = 0.0
    """Cores' worth of CPU that work outside the requests (e.g. the load generator) keeps busy."""
    interpreter: Interpreter | None = None
    """The server's global interpreter lock (the GIL); ``None``: no such lock."""
    time_slicing: bool = False
    """The cores are time-sliced among every runnable phase (processor sharing, as an operating
    system shares them) instead of served first come, first served; with ``shared_cores`` a
    batch's runtime call is one of those phases."""
    handoff_ms: float = 0.0
    """A thread's wake-up before each request's CPU phase (pre, post), ms, no core held; 0 with
    an ``interpreter`` (which has its own)."""
    handoff_dist: str = "constant"
    """How each wake-up is drawn: ``constant`` (the mean) or ``exponential``."""
    slice_ms: float = 0.0
    """With ``time_slicing``: the cores are handed out in slices of this many ms, round-robin (a
    phase woken onto busy cores waits for a running one's slice to end); 0: processor sharing."""
    device_hold_ms: tuple[tuple[float, float], ...] = ()
    """A device is held beyond each batch's runtime call for a draw of this distribution, no core
    held: ``(p, ms)`` points of its quantile function, ``p`` from 0 to 1, linear between points;
    empty: no hold."""
    call_preempt_per_ms: float = 0.0
    """A batch's runtime call loses its core this many times per ms of its cost (a Poisson count
    per batch), each time waiting a draw of ``call_preempt_ms``, its device held; 0: never."""
    call_preempt_ms: tuple[tuple[float, float], ...] = ()
    """How long a preempted runtime call waits for its core: ``(p, ms)`` points as
    ``device_hold_ms``; needed when ``call_preempt_per_ms`` > 0."""
    device_hold_busy_ms: tuple[tuple[float, float], ...] = ()
    """With ``shared_cores`` and ``time_slicing``, when the runtimes outnumber the cores: a batch
    dispatched while n runtime calls run on the cores finds its device thread's core busy with
    probability ``min(1, n / cpu_cores)`` and holds its device for a draw of this instead of
    ``device_hold_ms``: ``(p, ms)`` points as ``device_hold_ms``; empty: never."""
    pre_wake_ms: tuple[tuple[float, float], ...] = ()
    """A request's wait for a thread before its pre phase, drawn per request, no core held (the
    hops around the pre-processing hook as ``lanes serve --trace-requests`` measures them):
    ``(p, ms)`` points as ``device_hold_ms``; replaces ``handoff_ms`` for the pre phase (which
    must then be 0); empty: not used."""
    post_wake_ms: tuple[tuple[float, float], ...] = ()
    """The same before each request's post phase."""
    client_ms: tuple[tuple[float, float], ...] = ()
    """What the client's side adds to each request's latency (its send and receive, the kernel's
    socket queues): a draw per request, added at its end, nothing held; ``(p, ms)`` points as
    ``device_hold_ms``; empty: nothing."""
    gpu_queue: str = "share"
    """How a GPU serves jobs that overlap on it (``independent``'s workers, ``limit:K``):
    ``share`` (at once, each at ``eta(k) / k``) or ``fifo`` (one after another in launch order,
    as one stream: CUDA graphs replayed from several threads)."""
    call_stretch: tuple[float, ...] = ()
    """With ``shared_cores`` and ``time_slicing`` under processor sharing, when the runtimes
    outnumber the cores: with k runtime calls running on the cores each progresses at
    ``min(1, cpu_cores / n) / call_stretch[k-1]`` of a core (the last value repeating), calls
    slowing each other beyond processor sharing; each value >= 1; empty: no stretch."""
    pre_wake_busy_ms: tuple[tuple[float, float], ...] = ()
    """With ``shared_cores``, ``time_slicing`` and ``pre_wake_ms``: a pre's wake-up that begins
    while n runtime calls run on the cores finds them busy with probability ``min(1, n /
    cpu_cores)`` and is then a draw of this instead of ``pre_wake_ms`` (which is then the
    wake-up beside no call); ``(p, ms)`` points as ``device_hold_ms``; empty: never."""
    post_wake_busy_ms: tuple[tuple[float, float], ...] = ()
    """The same for the wake-up before each post (with ``post_wake_ms``)."""
    run_queues: bool = False
    """With ``time_slicing`` under processor sharing and no ``call_stretch``: each core keeps its
    own run queue and shares itself among the phases placed on it (an idle core if any, else a
    random one; an emptied core pulls from the fullest), as Linux does, instead of every phase
    sharing all the cores."""
    call_stretch_weighted: bool = False
    """With ``call_stretch``: while the n runnable phases outnumber the cores, the stretch as a
    share, not a loss — a call gets ``1 / call_stretch[k-1]`` of another phase's share of cores
    that hand out all they have; with a core to spare the calls stretch as without it. False:
    the stretch slows the calls and nothing gains what they lose."""
    call_on_core: float = 1.0
    """With ``shared_cores`` and ``time_slicing`` under processor sharing (no ``run_queues``, any
    ``call_stretch`` weighted): the share of its wall time a runtime call is on its core even with
    a core to spare (threads.py's CPU over CPU and run delay). Its work progresses at that share
    of what it is given, and while the runnable phases outnumber the cores that share is its
    weight, the rest going to the other phases. In (0, 1]; 1: on its core whenever it has one."""
    speed_cv: float = 0.0
    """With ``time_slicing``: the host's speed varies over time — epochs of exponential length
    with mean ``speed_ms``, each with a lognormal factor of mean 1 and this coefficient of
    variation, which multiplies the cost of every phase that asks for a core in it. 0: a
    steady host."""
    speed_ms: float = 0.0
    """The speed epochs' mean length in ms: above 0 exactly when ``speed_cv`` is."""
    lag_ms: float = 0.0
    """With ``shared_cores`` and ``time_slicing`` under processor sharing (no ``run_queues``,
    ``call_stretch`` or ``call_on_core`` below 1): a thread's lag — as Linux's EEVDF does, a
    thread that woke runs ahead of one that has run on, for about this much CPU. Each phase's
    first ``lag_ms`` less what its thread has run since it last slept is fresh and shares the
    cores first; the rest is stale and shares what fresh work leaves. A runtime call's thread is
    its device's executor (under ``independent`` its model's); what it has run grows by each
    call's cost up to ``lag_ms`` and drains while it sleeps. 0: every phase shares alike."""
    lag_among_calls: bool = False
    """With ``lag_ms``: the lag acts among the runtime calls only, and only while they outnumber
    the cores. Every phase keeps processor sharing's rate; when the calls exceed the cores they
    split their share among themselves, each call's first ``lag_ms`` ahead of the others' rest.
    One executor per core (``fifo``, ``sjf``) is then processor sharing (to a nanosecond of
    rounding); with a runtime per model the short calls run through and the long ones wait.
    False: the lag acts against every phase, per thread."""
    call_preempt_absorbed: bool = False
    """With ``call_preempt_per_ms``, ``shared_cores`` and ``time_slicing``: the preemptions' waits
    stand for all of a call's waiting for its core, some of which the shared cores already give
    it. They are drawn as before but held after the call, for what they exceed its time beyond its
    cost, so the call waits the larger of the two instead of their sum. False: held before the
    call, on top of the cores' sharing."""
    speed_series: tuple[float, ...] = ()
    """With ``time_slicing``, instead of ``speed_cv``: the host's speed as a measured series — the
    factor in effect from ``i x speed_series_ms`` to ``(i + 1) x speed_series_ms`` is the i-th
    value, the series repeating from its start once it ends; it multiplies the cost of every phase
    that asks for a core then. Each value > 0; empty: no series."""
    speed_series_ms: float = 0.0
    """The length of each of ``speed_series``'s values in ms: above 0 exactly when it is given."""
    call_stretch_capped: bool = False
    """With ``call_stretch`` (not weighted, ``call_on_core`` 1): the stretch as a cap on a call's
    rate, ``min(min(1, C/n), 1 / call_stretch[k-1])``, not a factor on it — it stands for all of
    a call's wait for a core, so where sharing the cores with the other phases already slows the
    call it adds only what it exceeds. False: the factor."""
    speed_run_cv: float = 0.0
    """With ``time_slicing`` and no ``speed_series``: the run's own speed — one lognormal factor
    of mean 1 and this coefficient of variation, drawn once per run, multiplies the cost of every
    phase on top of ``speed_cv``'s epochs, so that runs of one cell differ in speed as the lab's
    repeats do (host_speed.py ``--between-runs`` reads it). 0: none."""
    busy_run_cores: tuple[tuple[float, float], ...] = ()
    """A neighbour's cores over a run: ``(p, cores)`` quantile points of the cores the rest of the
    host keeps busy beyond ``busy_cores``, drawn once per run and added to ``busy_cores`` for all
    of it (bench/calibrate/neighbour.py reads them off grids). ``busy_cores`` plus the last point
    stays below ``cpu_cores``. Empty: ``busy_cores`` alone."""
    speed_cv_busy: float | None = None
    """With ``speed_cv``: spells that deepen with load — each speed epoch's cv is ``speed_cv +
    (speed_cv_busy - speed_cv) x u ** speed_busy_exponent``, ``u`` the cores' utilisation since
    the previous epoch's draw, so ``speed_cv`` is an idle host's and this one a host whose cores
    were all busy (round31/depth.py sets the lab's reading by level beside the simulator's). None:
    every epoch at ``speed_cv``."""
    speed_busy_exponent: float = 1.0
    """With ``speed_cv_busy``: the power of the utilisation in the epochs' cv, > 0; above 1 the
    depth stays near ``speed_cv`` until the cores are nearly all busy. 1: linear."""
    wake_spell_ms: float = 0.0
    """With ``pre_wake_ms`` or ``post_wake_ms``: the wake-ups come in spells — each wait's
    quantile level follows a latent process with this time constant (ms) that the wake-ups near
    it in time share, the table chosen as without it, so every wait keeps its table's
    distribution (crates/lanes-sim/src/wake_spell.rs; round34/wake_spells.py reads the lab's).
    0: each level drawn on its own."""
    wake_spell_share: float = 0.0
    """With ``wake_spell_ms``: the share of a wake-up's normal score that is the spell's, in
    (0, 1]; two wake-ups ``dt`` apart share ``wake_spell_share * exp(-dt / wake_spell_ms)``."""
    stop_ms: tuple[tuple[float, float], ...] = ()
    """The hypervisor's stops: ``(p, ms)`` quantile points of how long a core is taken away whole
    (bench/calibrate/stops.py reads them). Each core stops ``stops_per_s`` times a second; a
    stopped core leaves the pool and the phase that ran on it waits for the stop's end. Needs
    processor sharing without a lag (``time_slicing``, ``slice_ms`` 0, no ``run_queues``,
    ``lag_ms`` 0). Empty: no stops."""
    stops_per_s: float = 0.0
    """Stops per core per second (> 0 exactly when ``stop_ms`` is given)."""
    stop_run_per_s: tuple[tuple[float, float], ...] = ()
    """A run's stops per core per second beyond ``stops_per_s``: ``(p, per_s)`` quantile points
    drawn once per run, as ``busy_run_cores`` is. Needs ``stop_ms``. Empty: none."""
    deadline_rule: str = "start"
    """Whether a request must start by its deadline (``start``, ``lanes serve``'s default) or,
    when its batch is cut, also be estimated to finish by it (``finish``: ``lanes serve
    --deadline-rule finish``; the serving state's rule, crates/lanes-serving/src/deadline_rule.rs).
    Applies to the services' ``deadline_ms``."""

    def to_core(self) -> dict[str, Any]:
        core: dict[str, Any] = {
            "gpus": self.gpus,
            "cpu_cores": self.cpu_cores,
            "gpu_capacity": self.gpu_capacity,
            "semaphore": self.semaphore,
            "eta": list(self.eta),
            "shared_cores": self.shared_cores,
        }
        if self.gpu_queue != "share":
            core["gpu_queue"] = self.gpu_queue
        # Only when set, so scenarios without them hand over what they always did.
        if self.busy_cores:
            core["busy_cores"] = self.busy_cores
        if self.time_slicing:
            core["time_slicing"] = True
        if self.handoff_ms:
            core["handoff_ms"] = self.handoff_ms
        if self.handoff_dist != "constant":
            core["handoff_dist"] = self.handoff_dist
        if self.slice_ms:
            core["slice_ms"] = self.slice_ms
        if self.run_queues:
            core["run_queues"] = True
        if self.device_hold_ms:
            core["device_hold_ms"] = [list(p) for p in self.device_hold_ms]
        if self.call_preempt_per_ms:
            core["call_preempt_per_ms"] = self.call_preempt_per_ms
            core["call_preempt_ms"] = [list(p) for p in self.call_preempt_ms]
        if self.device_hold_busy_ms:
            core["device_hold_busy_ms"] = [list(p) for p in self.device_hold_busy_ms]
        if self.call_stretch:
            core["call_stretch"] = list(self.call_stretch)
        if self.call_stretch_weighted:
            core["call_stretch_weighted"] = True
        if self.call_stretch_capped:
            core["call_stretch_capped"] = True
        if self.call_on_core != 1.0:
            core["call_on_core"] = self.call_on_core
        if self.speed_cv:
            core["speed_cv"] = self.speed_cv
            core["speed_ms"] = self.speed_ms
        if self.lag_ms:
            core["lag_ms"] = self.lag_ms
        if self.lag_among_calls:
            core["lag_among_calls"] = True
        if self.call_preempt_absorbed:
            core["call_preempt_absorbed"] = True
        if self.speed_run_cv:
            core["speed_run_cv"] = self.speed_run_cv
        if self.busy_run_cores:
            core["busy_run_cores"] = [list(p) for p in self.busy_run_cores]
        if self.speed_cv_busy is not None:
            core["speed_cv_busy"] = self.speed_cv_busy
        if self.speed_busy_exponent != 1.0:
            core["speed_busy_exponent"] = self.speed_busy_exponent
        if self.wake_spell_ms:
            core["wake_spell_ms"] = self.wake_spell_ms
            core["wake_spell_share"] = self.wake_spell_share
        if self.stop_ms:
            core["stop_ms"] = [list(p) for p in self.stop_ms]
            core["stops_per_s"] = self.stops_per_s
        if self.stop_run_per_s:
            core["stop_run_per_s"] = [list(p) for p in self.stop_run_per_s]
        if self.deadline_rule != "start":
            core["deadline_rule"] = self.deadline_rule
        if self.speed_series:
            core["speed_series"] = list(self.speed_series)
            core["speed_series_ms"] = self.speed_series_ms
        for key in (
            "pre_wake_ms", "post_wake_ms", "client_ms", "pre_wake_busy_ms", "post_wake_busy_ms"
        ):  # fmt: skip
            if points := getattr(self, key):
                core[key] = [list(p) for p in points]
        if self.interpreter is not None:
            core["interpreter"] = {
                "batch_ms": self.interpreter.batch_ms,
                "handoff_ms": self.interpreter.handoff_ms,
                "convoy_ms": self.interpreter.convoy_ms,
            }
        return core


@dataclass(frozen=True)
class Interpreter:
    """One interpreter lock on the host that the server's Python work holds (docs/sim.md).

    Each request's ``pre`` and ``post`` and each batch's Python work (``batch_ms``, before its
    runtime call) start with a thread's wake-up (``handoff_ms``), then take the lock (first come
    first served; a lock handed to a waiting phase stays idle ``convoy_ms`` first), then a core;
    the runtime call and ``busy_cores`` do not hold it.
    """

    batch_ms: float = 0.0
    """Python work per batch, ms (dispatch, collate, split, completion)."""
    handoff_ms: float = 0.0
    """A thread's wake-up before each lock-holding phase, ms (the lock not held)."""
    convoy_ms: float = 0.0
    """The lock's idle time each time it is handed to a waiting phase, ms (the GIL convoy)."""


@dataclass(frozen=True)
class Batching:
    """A service's batching, with ``lanes serve``'s knobs, and its GPU cost curve in batch size.

    A batch of n items costs, on average, the curve through ``(1, gpu.mean_ms)`` and the
    ``batch_ms`` points: linear between points, extrapolated from the last two (with no points,
    ``n x gpu.mean_ms``: no gain). Each batch is that mean scaled by its requests' own GPU samples.
    """

    max_batch_size: int = 1
    batch_timeout_micros: int = 0
    num_batch_threads: int | None = None
    """Batches in flight at once; ``None``: one per GPU slot (``lanes serve``'s default is 1)."""
    batch_ms: tuple[tuple[int, float], ...] = ()

    def to_core(self) -> dict[str, Any]:
        return {
            "max_batch_size": self.max_batch_size,
            "batch_timeout_micros": self.batch_timeout_micros,
            "num_batch_threads": self.num_batch_threads,
            "batch_ms": [list(p) for p in self.batch_ms],
        }


@dataclass(frozen=True)
class Service:
    """One model served on the host: its traffic and the cost of its requests."""

    name: str
    share: float
    """Fraction of all requests (shares of a scenario sum to 1)."""
    workers_per_gpu: int
    arrival: Arrival
    pre: Cost
    gpu: Cost
    post: Cost
    slo_ms: float
    """This service's latency objective (the scenario's unless overridden)."""
    deadline_ms: float | None = None
    """Hard deadline: a request still unfinished this long after arrival is dropped."""
    batching: Batching | None = None
    """How requests are batched and what a batch costs; ``None``: batches of one."""
    client_connections: int | None = None
    """The load generator's connections for this service, one request in flight on each (the
    lab's ``connections``): the rest wait at the client, their latency counted from their
    arrival; ``None``: no limit."""

    def to_core(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "share": self.share,
            "workers_per_gpu": self.workers_per_gpu,
            "arrival": self.arrival.to_core(),
            "pre": self.pre.to_core(),
            "gpu": self.gpu.to_core(),
            "post": self.post.to_core(),
            "slo_ms": self.slo_ms,
            "deadline_ms": self.deadline_ms,
            **({"batching": self.batching.to_core()} if self.batching else {}),
            **(
                {"client_connections": self.client_connections}
                if self.client_connections is not None
                else {}
            ),
        }


@dataclass(frozen=True)
class Scenario:
    """A validated scenario. Build one with :meth:`load` or :meth:`from_toml`."""

    name: str
    description: str
    slo_ms: float
    host: Host
    services: tuple[Service, ...]
    source: str = ""
    """Where it came from, as the user named it: a path or a built-in name."""

    @classmethod
    def load(cls, scenario: str | os.PathLike[str]) -> Scenario:
        """Load a built-in scenario by name (see :func:`builtin_scenarios`) or a TOML file.

        A string equal to a built-in name means the built-in; anything else is a path (write
        ``./ocr`` for a file called ``ocr``).
        """
        if isinstance(scenario, str) and scenario in builtin_scenarios():
            path, source = _BUILTIN_DIR / f"{scenario}.toml", scenario
        else:
            path, source = Path(scenario), os.fspath(scenario)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            builtins = ", ".join(builtin_scenarios())
            raise LanesError(
                SCENARIO_NOT_FOUND,
                f"scenario {source}: no such file, and not a built-in scenario ({builtins})",
            ) from None
        except OSError as err:
            raise LanesError(
                SCENARIO_NOT_FOUND, f"scenario {source}: cannot read: {err.strerror or err}"
            ) from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            message = f"scenario {source}: not UTF-8 text: {err}"
            raise LanesError(SCENARIO_INVALID, message) from None
        return cls.from_toml(text, source=source, base_dir=path.parent, default_name=path.stem)

    @classmethod
    def from_toml(
        cls, text: str, *, source: str, base_dir: Path, default_name: str = "scenario"
    ) -> Scenario:
        """Parse scenario TOML ``text``; trace paths are relative to ``base_dir``."""
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            detail = " ".join(str(err).split())
            raise LanesError(
                SCENARIO_INVALID, f"scenario {source}: TOML syntax error: {detail}"
            ) from None
        return _parse(Table(raw, "", source), base_dir, default_name)

    @property
    def service_names(self) -> list[str]:
        return [s.name for s in self.services]

    def to_core(self) -> dict[str, Any]:
        """The normalised dict taken by ``lanes._core.simulate`` (times in ms; traces in s)."""
        return {
            "name": self.name,
            "slo_ms": self.slo_ms,
            "host": self.host.to_core(),
            "services": [s.to_core() for s in self.services],
        }


def builtin_scenarios() -> list[str]:
    """Names of the scenarios shipped inside the package, sorted."""
    return sorted(p.stem for p in _BUILTIN_DIR.glob("*.toml"))


def _parse(top: Table, base_dir: Path, default_name: str) -> Scenario:
    top.only(_TOP_KEYS)
    name = top.name("name", default=default_name)
    description = top.string("description", default="")
    slo_ms = top.number("slo_ms", low=0, low_open=True)
    host = _host(top.table("host", needs="must be a table: [host] with gpus and cpu_cores"))
    tables = top.tables("service", needs="must be one or more [[service]] tables")
    services = [_service(t, slo_ms, base_dir) for t in tables]
    _check_names(tables, services)
    shares = _check_shares(top, services)
    services = [replace(s, share=share) for s, share in zip(services, shares, strict=True)]
    return Scenario(name, description, slo_ms, host, tuple(services), top.source)


def _host(t: Table) -> Host:
    t.only(_HOST_KEYS)
    gpus = t.integer("gpus", low=1, high=64)
    cpu_cores = t.integer("cpu_cores", low=1, high=4096)
    gpu_capacity = t.integer("gpu_capacity", low=1, high=64, default=1)
    semaphore = t.integer("semaphore", low=1, high=64, default=1)
    eta = t.numbers("eta", low=0, low_open=True, default=(1.0,))
    for k, value in enumerate(eta, start=1):
        if value > k:
            raise t.error(
                f"eta[{k - 1}]", value, f"must be <= {k}: {k} jobs cannot run {value:g}x as fast"
            )
    shared = t.raw.get("shared_cores", False)
    if not isinstance(shared, bool):
        t.fail("shared_cores", "must be true or false")
    gpu_queue = t.raw.get("gpu_queue", "share")
    if gpu_queue not in ("share", "fifo"):
        t.fail("gpu_queue", "must be share or fifo")
    if gpu_queue == "fifo" and len(eta) > 1:
        t.fail("eta", 'must be one value with gpu_queue = "fifo" (one job runs at a time)')
    if gpu_queue == "fifo" and shared:
        t.fail(
            "gpu_queue", "needs shared_cores = false (with shared_cores a batch runs on the cores)"
        )
    busy = t.number("busy_cores", low=0, default=0.0)
    if busy >= cpu_cores:
        t.fail("busy_cores", f"must be a number >= 0 and below cpu_cores ({cpu_cores})")
    interpreter = None
    if t.has("interpreter"):
        i = t.table(
            "interpreter",
            needs="must be a table: [host.interpreter] with batch_ms, handoff_ms, convoy_ms",
        )
        i.only(_INTERPRETER_KEYS)
        interpreter = Interpreter(*(i.number(k, low=0, default=0.0) for k in _INTERPRETER_KEYS))
    slicing = t.raw.get("time_slicing", False)
    if not isinstance(slicing, bool):
        t.fail("time_slicing", "must be true or false")
    handoff = t.number("handoff_ms", low=0, default=0.0)
    if handoff and interpreter is not None:
        t.fail("handoff_ms", "must be 0 with [host.interpreter] (set its handoff_ms instead)")
    handoff_dist = t.raw.get("handoff_dist", "constant")
    if handoff_dist not in ("constant", "exponential"):
        t.fail("handoff_dist", "must be constant or exponential")
    slice_ms = t.number("slice_ms", low=0, default=0.0)
    if slice_ms and not slicing:
        t.fail("slice_ms", "must be 0 without time_slicing = true")
    preempt_per_ms = t.number("call_preempt_per_ms", low=0, default=0.0)
    preempt_ms = _quantiles(t, "call_preempt_ms")
    if preempt_per_ms and not preempt_ms:
        t.missing("call_preempt_ms", "must be given when call_preempt_per_ms > 0")
    hold_busy = _quantiles(t, "device_hold_busy_ms")
    if hold_busy and not (shared and slicing):
        t.fail("device_hold_busy_ms", "needs shared_cores = true and time_slicing = true")
    stretch = t.numbers("call_stretch", low=1, low_open=False, default=())
    if stretch and not (shared and slicing and not slice_ms):
        t.fail(
            "call_stretch",
            "needs shared_cores = true and time_slicing = true under processor sharing "
            "(slice_ms = 0)",
        )
    run_queues = t.raw.get("run_queues", False)
    if not isinstance(run_queues, bool):
        t.fail("run_queues", "must be true or false")
    if run_queues and not (slicing and not slice_ms and not stretch):
        t.fail(
            "run_queues",
            "needs time_slicing = true under processor sharing (slice_ms = 0) and no call_stretch",
        )
    weighted = t.raw.get("call_stretch_weighted", False)
    if not isinstance(weighted, bool):
        t.fail("call_stretch_weighted", "must be true or false")
    if weighted and not stretch:
        t.fail("call_stretch_weighted", "needs call_stretch (the stretch it weighs)")
    capped = t.raw.get("call_stretch_capped", False)
    if not isinstance(capped, bool):
        t.fail("call_stretch_capped", "must be true or false")
    if capped and (not stretch or weighted):
        t.fail("call_stretch_capped", "needs call_stretch (the stretch it caps), not weighted")
    on_core = t.number("call_on_core", low=0, low_open=True, high=1, default=1.0)
    if on_core < 1 and capped:
        t.fail("call_on_core", "below 1 cannot go with call_stretch_capped")
    if on_core < 1 and not (shared and slicing and not slice_ms and not run_queues):
        t.fail(
            "call_on_core",
            "below 1 needs shared_cores = true and time_slicing = true under processor sharing "
            "(slice_ms = 0, no run_queues)",
        )
    if on_core < 1 and stretch and not weighted:
        t.fail("call_on_core", "below 1 needs any call_stretch weighted (call_stretch_weighted)")
    speed_cv = t.number("speed_cv", low=0, default=0.0)
    speed_ms = t.number("speed_ms", low=0, default=0.0)
    if bool(speed_cv) != bool(speed_ms):
        t.fail("speed_cv" if speed_cv else "speed_ms", "needs speed_cv and speed_ms both > 0")
    if speed_cv and not slicing:
        t.fail("speed_cv", "needs time_slicing = true")
    series = t.numbers("speed_series", low=0, low_open=True, default=())
    series_ms = t.number("speed_series_ms", low=0, default=0.0)
    if bool(series) != bool(series_ms):
        key = "speed_series" if series else "speed_series_ms"
        t.fail(key, "needs speed_series and speed_series_ms > 0 both given")
    if series and speed_cv:
        t.fail("speed_series", "must not be given with speed_cv > 0 (one speed process)")
    if series and not slicing:
        t.fail("speed_series", "needs time_slicing = true")
    cv_busy = t.number("speed_cv_busy", low=0) if "speed_cv_busy" in t.raw else None
    if cv_busy is not None and not speed_cv:
        t.fail("speed_cv_busy", "needs speed_cv > 0 (the epochs whose depth it sets by load)")
    busy_exponent = t.number("speed_busy_exponent", low=0, low_open=True, default=1.0)
    if busy_exponent != 1.0 and cv_busy is None:
        t.fail("speed_busy_exponent", "needs speed_cv_busy (the depth by load it shapes)")
    run_cv = t.number("speed_run_cv", low=0, default=0.0)
    if run_cv and not slicing:
        t.fail("speed_run_cv", "needs time_slicing = true")
    if run_cv and series:
        t.fail("speed_run_cv", "must not be given with speed_series (a run replayed as measured)")
    busy_run = _quantiles(t, "busy_run_cores")
    if busy_run and busy + busy_run[-1][1] >= cpu_cores:
        t.fail(
            "busy_run_cores",
            f"busy_cores plus its last point must stay below cpu_cores ({cpu_cores})",
        )
    lag = t.number("lag_ms", low=0, default=0.0)
    if lag and not (shared and slicing and not slice_ms and not run_queues):
        t.fail(
            "lag_ms",
            "above 0 needs shared_cores = true and time_slicing = true under processor sharing "
            "(slice_ms = 0, no run_queues)",
        )
    if lag and (stretch or on_core < 1):
        t.fail("lag_ms", "above 0 not with call_stretch or call_on_core below 1")
    among_calls = t.raw.get("lag_among_calls", False)
    if not isinstance(among_calls, bool):
        t.fail("lag_among_calls", "must be true or false")
    if among_calls and not lag:
        t.fail("lag_among_calls", "needs lag_ms > 0 (the lag it splits the calls' share by)")
    absorbed = t.raw.get("call_preempt_absorbed", False)
    if not isinstance(absorbed, bool):
        t.fail("call_preempt_absorbed", "must be true or false")
    if absorbed and not (preempt_per_ms and shared and slicing):
        t.fail(
            "call_preempt_absorbed",
            "needs call_preempt_per_ms > 0, shared_cores = true and time_slicing = true (the "
            "cores' sharing whose wait it nets out)",
        )
    wakes = {k: _quantiles(t, k) for k in ("pre_wake_ms", "post_wake_ms")}
    for key, points in wakes.items():
        if points and (handoff or interpreter is not None):
            t.fail(key, "must not be given with handoff_ms > 0 or [host.interpreter]")
    busy_wakes = {k: _quantiles(t, k) for k in ("pre_wake_busy_ms", "post_wake_busy_ms")}
    for key, points in busy_wakes.items():
        idle = key.replace("_busy", "")
        if points and not (shared and slicing and wakes[idle]):
            t.fail(key, f"needs {idle}, shared_cores = true and time_slicing = true")
    spell_ms = t.number("wake_spell_ms", low=0, default=0.0)
    if spell_ms and not (wakes["pre_wake_ms"] or wakes["post_wake_ms"]):
        t.fail("wake_spell_ms", "needs pre_wake_ms or post_wake_ms (the draws it ties together)")
    spell_share = t.number("wake_spell_share", low=0, high=1, default=0.0)
    if bool(spell_ms) != bool(spell_share):
        key = "wake_spell_share" if spell_share else "wake_spell_ms"
        t.fail(key, "needs wake_spell_ms and wake_spell_share both > 0")
    stop_ms = _quantiles(t, "stop_ms")
    if stop_ms and stop_ms[-1][1] <= 0:
        t.fail("stop_ms", "must have its last point above 0 ms (the longest stop)")
    if stop_ms and not (slicing and not slice_ms and not run_queues and not lag):
        t.fail(
            "stop_ms",
            "needs time_slicing = true under processor sharing without a lag (slice_ms = 0, no "
            "run_queues, lag_ms = 0)",
        )
    stops_per_s = t.number("stops_per_s", low=0, default=0.0)
    if stop_ms and "stops_per_s" not in t.raw:
        t.missing("stops_per_s", "stop_ms needs the stops per core per second, above 0")
    if bool(stops_per_s) != bool(stop_ms):
        t.fail("stops_per_s", "must be above 0 exactly when stop_ms is given")
    stop_run = _quantiles(t, "stop_run_per_s")
    if stop_run and not stop_ms:
        t.fail("stop_run_per_s", "needs stop_ms (the stops whose rate it adds to)")
    deadline_rule = t.raw.get("deadline_rule", "start")
    if deadline_rule not in ("start", "finish"):
        t.fail("deadline_rule", "must be start or finish")
    return Host(
        gpus, cpu_cores, gpu_capacity, semaphore, tuple(eta), shared, busy, interpreter, slicing,
        handoff, handoff_dist, slice_ms, _quantiles(t, "device_hold_ms"), preempt_per_ms,
        preempt_ms, hold_busy, wakes["pre_wake_ms"], wakes["post_wake_ms"],
        _quantiles(t, "client_ms"), gpu_queue, tuple(stretch),
        busy_wakes["pre_wake_busy_ms"], busy_wakes["post_wake_busy_ms"], run_queues, weighted,
        on_core, speed_cv, speed_ms, lag, among_calls, absorbed, tuple(series), series_ms, capped,
        run_cv, busy_run, cv_busy, busy_exponent, spell_ms, spell_share, stop_ms, stops_per_s,
        stop_run, deadline_rule,
    )  # fmt: skip


def _quantiles(t: Table, key: str) -> tuple[tuple[float, float], ...]:
    """``key``'s ``[p, ms]`` points of a quantile function (empty when absent)."""
    rule = (
        "must be an array of [p, ms] points: p ascending from 0 to 1 (both ends given), ms >= 0 "
        "and not below the previous point's"
    )
    raw = t.raw.get(key, [])
    if not isinstance(raw, list) or len(raw) == 1:
        t.fail(key, rule)
    points: list[tuple[float, float]] = []
    for i, point in enumerate(raw):
        ok = (
            isinstance(point, list)
            and len(point) == 2
            and all(isinstance(x, int | float) and not isinstance(x, bool) for x in point)
            and all(math.isfinite(x) for x in point)
        )
        if not ok:
            raise t.error(f"{key}[{i}]", point, rule)
        p, ms = float(point[0]), float(point[1])
        first, last = i == 0, i == len(raw) - 1
        if (
            (first and p != 0.0)
            or (last and p != 1.0)
            or ms < 0
            or (points and (p <= points[-1][0] or ms < points[-1][1]))
        ):
            raise t.error(f"{key}[{i}]", point, rule)
        points.append((p, ms))
    return tuple(points)


def _service(t: Table, slo_ms: float, base_dir: Path) -> Service:
    t.only(_SERVICE_KEYS)
    gpu = _cost(t.table("gpu", needs=_COST_NEEDS), positive=True)
    gpu_ms = gpu.mean_ms
    return Service(
        name=t.name("name"),
        share=t.number("share", low=0, low_open=True, high=1),
        workers_per_gpu=t.integer("workers_per_gpu", low=1, high=1024, default=1),
        arrival=_arrival(t, base_dir),
        pre=_cost(t.table("pre", needs=_COST_NEEDS), positive=False),
        gpu=gpu,
        post=_cost(t.table("post", needs=_COST_NEEDS), positive=False),
        slo_ms=t.number("slo_ms", low=0, low_open=True, default=slo_ms),
        deadline_ms=t.optional_number("deadline_ms", low=0, low_open=True),
        batching=_batching(t.table("batching", needs=_BATCHING_NEEDS), gpu_ms)
        if t.has("batching")
        else None,
        client_connections=t.integer("client_connections", low=1, high=1_000_000)
        if t.has("client_connections")
        else None,
    )


def _batching(t: Table, gpu_ms: float) -> Batching:
    t.only(_BATCHING_KEYS)
    threads = (
        t.integer("num_batch_threads", low=1, high=4096) if t.has("num_batch_threads") else None
    )
    rule = (
        "must be an array of [n, ms] points: n > 1 ascending, ms > 0 and not below the previous "
        "point's (the implied first point is [1, gpu.mean_ms])"
    )
    points: list[tuple[int, float]] = []
    last = (1, gpu_ms)
    raw = t.raw.get("batch_ms", [])
    if not isinstance(raw, list):
        t.fail("batch_ms", rule)
    for i, point in enumerate(raw):
        ok = (
            isinstance(point, list)
            and len(point) == 2
            and isinstance(point[0], int)
            and not isinstance(point[0], bool)
            and isinstance(point[1], int | float)
            and not isinstance(point[1], bool)
        )
        if not ok or point[0] <= last[0] or not point[1] > 0 or point[1] < last[1]:
            raise t.error(f"batch_ms[{i}]", point, rule)
        last = (point[0], float(point[1]))
        points.append(last)
    return Batching(
        max_batch_size=t.integer("max_batch_size", low=1, high=4096, default=1),
        batch_timeout_micros=t.integer("batch_timeout_micros", low=0, high=10_000_000, default=0),
        num_batch_threads=threads,
        batch_ms=tuple(points),
    )


def _cost(t: Table, *, positive: bool) -> Cost:
    t.only(_COST_KEYS)
    dist = t.choice("dist", DISTS, default="lognormal")
    mean_ms = t.number("mean_ms", low=0, low_open=positive)
    if dist == "lognormal":
        cv = t.number("cv", low=0, high=MAX_CV)
    elif dist == "exponential":
        cv = t.number("cv", default=1.0)
        if cv != 1.0:
            t.fail("cv", "an exponential distribution has cv 1: leave cv out")
    else:
        cv = t.number("cv", default=0.0)
        if cv != 0.0:
            t.fail("cv", "a constant has cv 0: leave cv out")
    if mean_ms == 0.0:
        return Cost("constant", 0.0, 0.0)
    return Cost(dist, mean_ms, cv)


def _arrival(service: Table, base_dir: Path) -> Arrival:
    if not service.has("arrival"):
        return Poisson()
    raw = service.raw["arrival"]
    if isinstance(raw, str):
        if raw == "poisson":
            return Poisson()
        if raw == "bursty":
            service.fail("arrival", 'bursty needs a cv: arrival = { kind = "bursty", cv = 2.0 }')
        if raw == "trace":
            service.fail(
                "arrival", 'trace needs a file: arrival = { kind = "trace", path = "..." }'
            )
        service.fail("arrival", _ARRIVAL_NEEDS)
    t = service.table("arrival", needs=_ARRIVAL_NEEDS)
    kind = t.choice("kind", ARRIVALS)
    if kind == "poisson":
        t.only(("kind",))
        return Poisson()
    if kind == "bursty":
        t.only(("kind", "cv"))
        return Bursty(t.number("cv", low=0, low_open=True, high=MAX_CV))
    t.only(("kind", "path"))
    path = base_dir / t.string("path")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        t.fail("path", f"no such file ({path}; paths are relative to the scenario file)")
    except (OSError, UnicodeDecodeError) as err:
        t.fail("path", f"cannot read {path}: {getattr(err, 'strerror', None) or err}")
    try:
        times = parse_trace(text)
    except TraceFormatError as err:
        t.fail("path", f"bad trace: {err}")
    return Trace(path, times)


def _check_names(tables: list[Table], services: list[Service]) -> None:
    seen: dict[str, int] = {}
    for i, service in enumerate(services):
        if service.name in seen:
            tables[i].fail("name", f"duplicate: service[{seen[service.name]}] has this name")
        seen[service.name] = i


def _check_shares(top: Table, services: list[Service]) -> list[float]:
    total = math.fsum(s.share for s in services)
    if abs(total - 1.0) > SHARE_TOLERANCE:
        terms = " + ".join(f"{s.share:g}" for s in services)
        raise LanesError(
            SCENARIO_INVALID,
            f"scenario {top.source}: service[*].share = {terms} = {total:g}: "
            "the shares must sum to 1",
        )
    return [s.share / total for s in services]
