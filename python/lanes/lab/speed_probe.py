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
*host speed* is its ``work_ms`` over the median ``work_ms`` of every run in the folder that has
one (:func:`host_speeds`): 1.0 for a typical run, 1.15 when the host ran the same work 15 %
slower. A run at :data:`SLOW_HOST` or more ran on a *slow host* (lanes.lab.aggregate lists it).
Like a disturbed run (lanes.lab.host_noise) it stays in every figure: the reader is told where
to look.

**Cost.** One :func:`work` takes about 0.2 ms of CPU on this project's 2-core host (AMD EPYC,
KVM), so the probe takes about 0.4 % of one core, counted as the lab's (``lab_cpu_s``). Its
samples there spread 3 % from the tenth to the ninetieth percentile on a quiet host.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

PERIOD_S = 0.1
"""Seconds between the probe's samples."""
SLOW_HOST = 1.10
"""A run's host speed (its probe over the folder's median) at which it ran on a slow host: three
times the 3 % the probe's samples spread from the tenth to the ninetieth percentile on a quiet
host, and what the calibration's runaway runs' calls cost beyond their level's median run."""
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


def run_until(
    end_unix: float,
    work: Work,
    period_s: float = PERIOD_S,
    clock: Callable[[], float] = time.time,
) -> dict[str, Any]:
    """Sample every ``period_s`` from now until ``end_unix``; the run file's ``speed_probe``:
    ``period_ms``, ``samples``, ``work_ms`` (their median, None without samples) and ``series``
    (``[seconds since the first sample, ms]``, rounded to 0.1 µs)."""
    start = clock()
    series: list[list[float]] = []
    next_at = start
    while True:
        now = clock()
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


def host_speeds(runs: Sequence[Mapping[str, Any]]) -> list[float | None]:
    """Each run's host speed (rule above), None for a run without a probe or when no run has
    one."""
    values = [work_ms(r) for r in runs]
    known = [v for v in values if v is not None]
    if not known:
        return [None] * len(values)
    base = statistics.median(known)
    return [None if v is None else v / base for v in values]
