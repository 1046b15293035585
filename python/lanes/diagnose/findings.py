"""Findings: rules that turn a profiled run's evidence into named causes.

Each rule reads :class:`Evidence` and returns at most one :class:`Finding` with a stable
``code``, a one-line ``message`` that names the frame or the number it rests on, and the
``evidence`` numbers. A rule whose evidence was not recorded (a tool skipped) says nothing; the
skipped line already says why. Thresholds are module constants, chosen so that a clean service
(tests/diagnose/zoo/clean.py) under the same load gives no finding.

Rules:

- ``core_saturated`` — one core busy >= ``CORE_BUSY`` of the window while another is busy
  <= ``CORE_IDLE``, >= ``CORE_SHARE`` of the server's CPU time ran on the busy core, and the
  server itself kept that core busy >= ``SERVER_ON_CORE`` of the window (a light server on a
  core that other work fills is not the cause).
- ``threads_excess`` — the server's threads peak above ``THREADS_PER_CORE`` x cores and grew
  during the window by at least the number of cores (threads created under load and not ended).
- ``loop_blocked`` — a thread running an asyncio event loop (a stack through ``_run_once``) is
  off-CPU outside the selector's ``select`` for >= ``LOOP_BLOCKED`` of its samples; the frame
  named is the most frequent leaf of those samples, or, when it holds under ``SPREAD`` of them,
  the finding says the blocking is spread over many frames (a loop waiting for the GIL).
- ``loop_saturated`` — an asyncio event loop's thread is on CPU for >= ``LOOP_BUSY`` of its
  samples: one thread, one core, the server's ceiling; the hottest frames (self time) are named.
- ``lock_contention`` — ``futex`` calls per request >= ``FUTEX_PER_REQUEST`` and one leaf frame
  holds >= ``LOCK_SHARE`` of the off-CPU samples of working threads (on CPU in >= 2 % of
  their samples) that are not idle waits (a selector, a socket
  accept/receive, a worker waiting for work, a sleep); that frame is named.
- ``arrivals_clumped`` — the index of dispersion (variance / mean) of the client's sends counted
  in 10 ms bins is >= ``DISPERSION``; Poisson arrivals give about 1, evenly spaced ones about 0.
  Not when more than ``LATE_SENDS`` of the sends left late: then the client waited for
  connections a saturated server held, and the clumps are the server's backlog draining.
- ``json_encoding`` — stacks through a JSON encoder (``json/encoder.py``, ``json.dumps``,
  ``orjson``, ``serde_json``) hold >= ``JSON_SHARE`` of the server's on-CPU samples.

A share of samples rests on at least ``MIN_SAMPLES`` samples, or the rule says nothing.
Off-CPU counts are differences of two recorders' counts (:mod:`lanes.diagnose.stacks`); they
are summed per leaf frame before clipping at zero and must stand ``NOISE_SIGMAS`` standard
deviations above sampling noise (:func:`significant`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

CORE_BUSY = 0.75
CORE_IDLE = 0.5
CORE_SHARE = 0.9
SERVER_ON_CORE = 0.5
THREADS_PER_CORE = 4
LOOP_BLOCKED = 0.10
LOOP_BUSY = 0.85
SPREAD = 0.3
"""Below this share of the loop's blocked samples, the top frame is not "the" blocking call."""
FUTEX_PER_REQUEST = 1.0
LOCK_SHARE = 0.25
DISPERSION = 4.0
LATE_SENDS = 0.5
JSON_SHARE = 0.15
MIN_SAMPLES = 10
NOISE_SIGMAS = 3.0
"""Fewest samples a share-of-samples rule rests on: below it the share is noise."""

_SELECT = re.compile(r"^(\w+\.)?(select|poll|_poll|epoll_wait) \(selectors\.py")
_WAIT_MODULES = re.compile(
    r"\((selectors|socket|socketserver|ssl|queue|threading|subprocess|"
    r"concurrent/futures/(thread|_base)|multiprocessing/(connection|queues|pool|resource_tracker)|"
    r"asyncio/[a-z_]+)\.py:\d+\)$"
)
"""Standard-library modules whose frames block by design: a selector, a socket read, a
worker waiting for work or for a result. Locks taken in user code, logging's handler lock
and a thread waiting for the GIL show other frames."""
_WAIT_NAMES = re.compile(r"^(\w+\.)?(select|poll|epoll_wait|accept|sleep|serve_forever) \(")


def idle_wait(frame: str) -> bool:
    """True when a blocked thread's leaf ``frame`` is a wait by design (see _WAIT_MODULES)."""
    return bool(_WAIT_MODULES.search(frame) or _WAIT_NAMES.match(frame))


_JSON = re.compile(r"json/encoder\.py|^dumps \(|orjson.*dumps|serde_json::ser")


@dataclass(frozen=True)
class Finding:
    """A named cause with the numbers it rests on."""

    code: str
    message: str
    evidence: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "evidence": dict(self.evidence)}


@dataclass
class Evidence:
    """What a profiled run recorded, in the shapes the rules read (None: not recorded)."""

    cores: int
    requests: int
    cpu: list[dict[str, Any]] | None = None
    """Host samples: ``[{"t", "cores": [{"user", "system", "softirq", "iowait", "idle"}]}]``."""
    processes: dict[str, dict[str, Any]] | None = None
    oncpu: Counter[str] | None = None
    """On-CPU samples per stack (py-spy without ``--idle``, or perf)."""
    every: Counter[str] | None = None
    """Every thread's samples per stack (py-spy ``--idle``); None for native processes."""
    syscalls: dict[str, dict[str, float | None]] | None = None
    dispersion: float | None = None
    late_sends: float | None = None
    """Share of open-loop sends that left late (None in closed loop)."""
    arrival: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def diagnose(ev: Evidence) -> list[Finding]:
    """Every rule's finding on ``ev``, in the order of the module docstring."""
    rules: list[Callable[[Evidence], Finding | None]] = [
        core_saturated,
        threads_excess,
        loop_blocked,
        loop_saturated,
        lock_contention,
        arrivals_clumped,
        json_encoding,
    ]
    return [f for f in (rule(ev) for rule in rules) if f is not None]


def frames(stack: str) -> list[str]:
    """A folded stack's frames, root first, without py-spy's process and thread roots."""
    return [f for f in stack.split(";") if not f.startswith(("process ", "thread ("))]


def thread_of(stack: str) -> str | None:
    """The ``thread (TID): name`` root of a py-spy ``--threads`` stack, if any."""
    for f in stack.split(";")[:3]:
        if f.startswith("thread ("):
            return f
    return None


def _leaf(stack: str) -> str:
    fs = frames(stack)
    return fs[-1] if fs else stack


def core_busy(cpu: list[dict[str, Any]]) -> list[float]:
    """Mean busy fraction (1 - idle - iowait) of each core over the samples."""
    if not cpu:
        return []
    n = len(cpu[0]["cores"])
    sums = [0.0] * n
    for s in cpu:
        for i, c in enumerate(s["cores"][:n]):
            sums[i] += 1.0 - c["idle"] - c["iowait"]
    return [x / len(cpu) for x in sums]


def core_saturated(ev: Evidence) -> Finding | None:
    if not ev.cpu or not ev.processes:
        return None
    busy = core_busy(ev.cpu)
    if len(busy) < 2:
        return None
    hot = max(range(len(busy)), key=busy.__getitem__)
    cold = min(range(len(busy)), key=busy.__getitem__)
    if busy[hot] < CORE_BUSY or busy[cold] > CORE_IDLE:
        return None
    by_core: Counter[str] = Counter()
    for doc in ev.processes.values():
        for s in doc["samples"]:
            by_core.update(s.get("cpu_by_core_s", {}))
    total = sum(by_core.values())
    if total <= 0:
        return None
    share = by_core.get(str(hot), 0.0) / total
    if share < CORE_SHARE:
        return None
    wall = max(
        (
            d["samples"][-1]["t"] - d["samples"][0]["t"]
            for d in ev.processes.values()
            if d["samples"]
        ),
        default=0.0,
    )
    on_core = by_core.get(str(hot), 0.0) / wall if wall > 0 else 0.0
    if on_core < SERVER_ON_CORE:
        return None  # the core is busy with other work; the server only runs there
    affinity = sorted({c for doc in ev.processes.values() for c in doc.get("affinity", [])})
    return Finding(
        "core_saturated",
        f"one core saturated while others idle: core {hot} {busy[hot]:.0%} busy, core {cold} "
        f"{busy[cold]:.0%}; {share:.0%} of the server's CPU ran on core {hot}, keeping it "
        f"{min(on_core, 1.0):.0%} busy (allowed cores {affinity})",
        {
            "core_busy": [round(b, 3) for b in busy],
            "server_share_on_core": round(share, 3),
            "server_busy_on_core": round(min(on_core, 1.0), 3),
            "affinity": affinity,
        },
    )


def _thread_series(processes: Mapping[str, Mapping[str, Any]]) -> list[int]:
    """Total threads of the process tree at each sample index."""
    series: list[int] = []
    for doc in processes.values():
        for i, s in enumerate(doc["samples"]):
            if i >= len(series):
                series.append(0)
            series[i] += int(s["threads"])
    return series


def threads_excess(ev: Evidence) -> Finding | None:
    if not ev.processes:
        return None
    series = _thread_series(ev.processes)
    if len(series) < 2:
        return None
    peak, first, last = max(series), series[0], series[-1]
    if peak <= THREADS_PER_CORE * ev.cores or last - first < ev.cores:
        return None
    return Finding(
        "threads_excess",
        f"threads exceed cores x{peak / ev.cores:.0f} and grow with load: {first} -> {last} "
        f"during the window (peak {peak}, {ev.cores} cores)",
        {"threads_first": first, "threads_last": last, "threads_peak": peak, "cores": ev.cores},
    )


def blocked_by_leaf(
    ev: Evidence, keep: Callable[[str], bool]
) -> tuple[Counter[str], int, int, dict[str, int]]:
    """Off-CPU samples per leaf frame over the stacks ``keep`` accepts: the ``--idle``
    recorder's count minus the on-CPU recorder's, summed per leaf *before* clipping at 0
    (clipping per stack would turn sampling noise into phantom blocking). Also returns the
    two recorders' totals over those stacks and each leaf's summed count (for the noise
    bound)."""
    assert ev.every is not None and ev.oncpu is not None
    every: Counter[str] = Counter()
    on: Counter[str] = Counter()
    for s, n in ev.every.items():
        if keep(s):
            every[_leaf(s)] += n
    for s, n in ev.oncpu.items():
        if keep(s):
            on[_leaf(s)] += n
    diff = Counter({k: every[k] - on[k] for k in every if every[k] - on[k] > 0})
    both = {k: every[k] + on[k] for k in every}
    return diff, sum(every.values()), sum(on.values()), both


def significant(blocked: float, counted: int) -> bool:
    """A difference of two independent sample counts is real when it is at least
    ``NOISE_SIGMAS`` standard deviations (about the square root of their sum) and at least
    ``MIN_SAMPLES``."""
    return blocked >= max(MIN_SAMPLES, NOISE_SIGMAS * math.sqrt(max(counted, 1)))


def loop_blocked(ev: Evidence) -> Finding | None:
    if ev.oncpu is None or ev.every is None:
        return None
    loops = {t for s in ev.every if "_run_once (asyncio" in s and (t := thread_of(s)) is not None}
    threads = {t for s in ev.every if (t := thread_of(s)) is not None}
    worst: tuple[float, str, float, int] | None = None
    for t in loops:
        total = sum(n for s, n in ev.every.items() if thread_of(s) == t)

        def busy_in_loop(s: str, t: str = t) -> bool:
            return thread_of(s) == t and not any(_SELECT.match(f) for f in frames(s))

        diff, every, on, _ = blocked_by_leaf(ev, busy_in_loop)
        blocked = every - on
        if not diff or not total or not significant(blocked, every + on):
            continue
        share = blocked / total
        if worst is None or share > worst[0]:
            frame, n = diff.most_common(1)[0]
            worst = (share, frame, min(1.0, n / blocked), total)
    if worst is None or worst[0] < LOOP_BLOCKED:
        return None
    share, frame, frame_share, total = worst
    if frame_share >= SPREAD:
        where = f"in {frame}"
    else:
        why = (
            "waiting for the GIL or a lock that other threads hold, not one blocking call"
            if len(threads) > 1
            else "no single blocking call"
        )
        where = f"spread over many frames (the top, {frame}, holds {frame_share:.0%}): {why}"
    return Finding(
        "loop_blocked",
        f"event loop blocked {share:.0%} of wall time {where}",
        {
            "blocked_share": round(share, 3),
            "frame": frame,
            "frame_share": round(frame_share, 3),
            "samples": total,
        },
    )


def loop_saturated(ev: Evidence) -> Finding | None:
    if ev.oncpu is None or ev.every is None:
        return None
    worst: tuple[float, str] | None = None
    for t in {t for s in ev.every if "_run_once (asyncio" in s and (t := thread_of(s))}:
        total = sum(n for s, n in ev.every.items() if thread_of(s) == t)
        on = sum(n for s, n in ev.oncpu.items() if thread_of(s) == t)
        if total >= MIN_SAMPLES and (worst is None or on / total > worst[0]):
            worst = (on / total, t)
    if worst is None or worst[0] < LOOP_BUSY:
        return None
    share, t = worst
    hot: Counter[str] = Counter()
    for s, n in ev.oncpu.items():
        if thread_of(s) == t:
            hot[_leaf(s)] += n
    on = sum(hot.values())
    top = ", ".join(f"{f} {n / on:.0%}" for f, n in hot.most_common(3))
    return Finding(
        "loop_saturated",
        f"event loop saturated: its thread on CPU {min(share, 1.0):.0%} of wall time, a ceiling "
        f"of one core; hottest frames: {top}",
        {"busy_share": round(min(share, 1.0), 3), "hot_frames": dict(hot.most_common(5))},
    )


def _working_threads(ev: Evidence) -> set[str | None]:
    """Threads seen on CPU in at least 2 % of their samples (and twice): a thread that never
    runs in the window (a resource tracker, a watchdog) is idle by design wherever it waits."""
    assert ev.every is not None and ev.oncpu is not None
    every: Counter[str | None] = Counter()
    on: Counter[str | None] = Counter()
    for s, n in ev.every.items():
        every[thread_of(s)] += n
    for s, n in ev.oncpu.items():
        on[thread_of(s)] += n
    return {t for t, n in every.items() if on[t] >= max(2, 0.02 * n)}


def lock_contention(ev: Evidence) -> Finding | None:
    if ev.syscalls is None or ev.every is None or ev.oncpu is None or ev.requests <= 0:
        return None
    futex = (ev.syscalls.get("futex", {}).get("calls") or 0) / ev.requests
    if futex < FUTEX_PER_REQUEST:
        return None

    working = _working_threads(ev)

    def waiting(s: str) -> bool:
        return thread_of(s) in working and "_run_once (asyncio" not in s and not idle_wait(_leaf(s))

    diff, _, _, both = blocked_by_leaf(ev, waiting)
    total = sum(diff.values())
    if not total:
        return None
    frame, n = diff.most_common(1)[0]
    if n / total < LOCK_SHARE or not significant(n, both[frame]):
        return None
    return Finding(
        "lock_contention",
        f"futex per request {futex:.1f} (lock contention in {frame}: {n / total:.0%} of "
        "blocked samples)",
        {"futex_per_request": round(futex, 2), "frame": frame, "frame_share": round(n / total, 3)},
    )


def arrivals_clumped(ev: Evidence) -> Finding | None:
    if ev.dispersion is None or ev.dispersion < DISPERSION:
        return None
    if ev.late_sends is not None and ev.late_sends > LATE_SENDS:
        return None  # sends waited for busy connections: the server's backlog, not the client
    how = f" (the workload's arrival is {ev.arrival})" if ev.arrival else ""
    if ev.arrival in ("bursty", "trace"):
        so = (
            f"the server sees waves, as the {ev.arrival} workload asks: is that production's shape?"
        )
    else:
        so = "the server sees synchronised waves, not the intended process"
    return Finding(
        "arrivals_clumped",
        f"client arrivals clumped: dispersion {ev.dispersion:.1f} of sends per 10 ms "
        f"(Poisson: 1){how}; {so}",
        {"dispersion_10ms": round(ev.dispersion, 2), "arrival": ev.arrival},
    )


def json_encoding(ev: Evidence) -> Finding | None:
    if not ev.oncpu:
        return None
    total = sum(ev.oncpu.values())
    hits: Counter[str] = Counter()
    for s, n in ev.oncpu.items():
        fs = frames(s)
        for i, f in enumerate(fs):
            if _JSON.search(f):
                hits[fs[i - 1] if i else f] += n  # the caller that encodes
                break
    share = sum(hits.values()) / total if total else 0.0
    if share < JSON_SHARE or sum(hits.values()) < MIN_SAMPLES:
        return None
    frame = hits.most_common(1)[0][0]
    return Finding(
        "json_encoding",
        f"time in JSON encoding {share:.0%} of CPU (called from {frame})",
        {"share": round(share, 3), "frame": frame},
    )
