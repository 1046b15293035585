"""Host speed probe: how fast this host ran a fixed piece of work while a run measured.

A guest on a shared host runs slower at times with no process and no steal to show for it: a
neighbouring guest on the same physical cores takes their caches, their memory bandwidth or
their clock. The calibration's runaway runs were such spells (docs/results/calibration.md, the
twenty-third and twenty-fourth rounds: every call 10-20 % dearer, the slowness before the
backlog). The server's own calls cannot tell such a spell from its load, since a backlog changes
what runs beside them. So the runner measures the host beside the server: every
:data:`PERIOD_S` over the measurement window it runs :func:`work` (a fixed, single-threaded
numpy sweep over a buffer larger than a core's L2 cache and a few small matrix products) and
reads the CPU time it took on the thread's own CPU clock. Waiting for a core does not count,
only how fast the core ran the work once it had it.

**Rule.** A run file's ``speed_probe`` holds the samples' median (``work_ms``), their count and
the series (seconds into the window, ms). Over a results folder (one host, one session) a run's
*host speed* is its ``work_ms`` over the median ``work_ms`` of its peers, the runs at the same
offered load (rate or concurrency, every variant and repeat, itself included), when at least
:data:`MIN_PEERS` of them carry a probe (:func:`host_speeds`): 1.0 for a typical run, 1.25 when
the host ran the same work 25 % slower. A run with fewer peers has no host speed: the probe is
set only against runs at the same load, because it
reads slower at light load (on round 24's two grids of the 2-core host the runs at 200-400
req/s read 3 % slower than those at 600-900, medians, and at 5 req/s it can read half again as
slow: a core that idles runs the next work colder, as the server's calls do). A run at
:data:`SLOW_HOST` or more ran on a *slow host* (lanes.lab.aggregate lists it). Like a disturbed
run (lanes.lab.host_noise) it stays in every figure: the reader is told where to look.

**What it reads.** On this project's 2-core host (AMD EPYC, KVM), one :func:`work` takes about
0.25 ms of CPU; a run's 50 samples spread 0.16 (sd of their log), so its median is good to about
3 %. Over 120 runs the host speed's log spread 0.074, twice the spread of the server's own
calls' CPU from run to run, and correlated with it (+0.46 at 200-400 req/s, +0.33 at 600-900;
docs/results/calibration.md, the twenty-fourth round): the probe sees the host's slow spells
and some of its own. A memory-bound neighbour process on the other core did not slow it.

**Cost.** Two :func:`work` a sample (one untimed, to warm the cache), every 0.1 s: about 0.5 %
of one core, counted as the lab's (``lab_cpu_s``).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

PERIOD_S = 0.1
"""Seconds between the probe's samples."""
SLOW_HOST = 1.20
"""A run's host speed (its probe over its peers' median) at which it ran on a slow host: about
2.5 standard deviations of the host speed's log over 120 runs on two grids of the 2-core host
(0.074; 1 run of 120 at 1.20 or more), and about twice the 8-15 % the calibration's runaway
runs' calls cost beyond their level's median run, since the probe varies about twice as much as
the calls (round 24)."""
MIN_PEERS = 3
"""Runs with a probe at the same offered load for their median to be a run's baseline."""
_SWEEP = 512 * 1024
"""float32 elements the sweep writes (2 MiB: past a core's L2, inside a host's L3)."""
_MATRIX = 64
_PRODUCTS = 8


class Work:
    """The probe's fixed piece of work and its buffers (allocated once, outside the window)."""

    def __init__(self) -> None:
        self._a = np.ones(_SWEEP, dtype=np.float32)
        self._b = np.empty_like(self._a)
        self._m = np.random.default_rng(1).standard_normal((_MATRIX, _MATRIX)).astype(np.float32)
        self()  # the first call pays for page faults and loading, not the host's speed

    def __call__(self) -> float:
        np.multiply(self._a, 1.0001, out=self._b)
        total = float(self._b.sum())
        x = self._m
        for _ in range(_PRODUCTS):
            x = self._m @ x
            x /= float(np.abs(x).max()) or 1.0
        return total + float(x[0, 0])


def sample(work: Work) -> float:
    """The thread's CPU time, in ms, that one ``work()`` took, run once before untimed so that
    its buffers are in the cache (after the probe's sleep, other threads' work has evicted
    them, and a cold sweep measures how much they evicted rather than the host)."""
    work()
    t0 = time.thread_time_ns()
    work()
    return (time.thread_time_ns() - t0) / 1e6


def run_until(end_unix: float, work: Work, period_s: float = PERIOD_S) -> dict[str, Any]:
    """Sample every ``period_s`` from now until ``end_unix``; the run file's ``speed_probe``:
    ``period_ms``, ``samples``, ``work_ms`` (their median, None without samples) and ``series``
    (``[seconds since the first sample, ms]``, rounded to 0.1 µs)."""
    start = time.time()
    series: list[list[float]] = []
    next_at = start
    while True:
        now = time.time()
        if now >= end_unix:
            break
        if now < next_at:
            time.sleep(min(next_at, end_unix) - now)  # the next sample's time, not a sync
            continue
        series.append([round(now - start, 4), round(sample(work), 4)])
        next_at += period_s
    return {
        "period_ms": round(period_s * 1e3, 3),
        "samples": len(series),
        "work_ms": round(statistics.median(ms for _, ms in series), 4) if series else None,
        "series": series,
    }


def work_ms(run: Mapping[str, Any]) -> float | None:
    """A run document's probe median, None where it has none."""
    probe = run.get("speed_probe")
    value = probe.get("work_ms") if isinstance(probe, Mapping) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def _load_key(run: Mapping[str, Any]) -> tuple[Any, Any]:
    """The offered load a run ran at: (rate, concurrency)."""
    offered = run.get("offered")
    if not isinstance(offered, Mapping):
        return (None, None)
    return (offered.get("rate_rps"), offered.get("concurrency"))


def host_speeds(runs: Sequence[Mapping[str, Any]]) -> list[float | None]:
    """Each run's host speed (rule above), None for a run without a probe or with fewer than
    :data:`MIN_PEERS` runs with one at its load."""
    values = [work_ms(r) for r in runs]
    peers: dict[tuple[Any, Any], list[float]] = {}
    for r, v in zip(runs, values, strict=True):
        if v is not None:
            peers.setdefault(_load_key(r), []).append(v)
    base = {k: statistics.median(v) for k, v in peers.items() if len(v) >= MIN_PEERS}
    out: list[float | None] = []
    for r, v in zip(runs, values, strict=True):
        b = base.get(_load_key(r))
        out.append(None if v is None or b is None else v / b)
    return out
