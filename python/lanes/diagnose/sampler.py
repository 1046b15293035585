"""CPU per core, threads and context switches over time, read from ``/proc`` with psutil.

Every ``interval_s`` the sampler reads

- the host's CPU times per core (``psutil.cpu_times(percpu=True)``) and keeps, per interval and
  core, the fraction of the interval spent in user (with nice), system, softirq (with irq),
  iowait and idle (with steal);
- for each target process (the root PID and every descendant alive at that tick): user and
  system CPU seconds, threads, voluntary and involuntary context switches, and, from
  ``/proc/PID/task/TID/stat`` (psutil does not expose a thread's processor), each thread's CPU
  time and the core it last ran on. A thread's CPU time of the interval is attributed to that
  core: the per-core split of a process is exact for threads that stay on one core and an
  approximation (last core wins) for threads that migrate within an interval.

:meth:`Sampler.stop` returns the series as plain JSON-able data (docs/diagnosis.md, ``cpu`` and
``processes``). A process that exits mid-run keeps its samples until then.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import psutil

_CLK_TCK = float(os.sysconf("SC_CLK_TCK"))


def _thread_cpu(pid: int) -> dict[int, tuple[float, int]]:
    """{tid: (user+system seconds, processor)} of every thread of ``pid`` now."""
    out: dict[int, tuple[float, int]] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", encoding="ascii") as f:
                text = f.read()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        # fields[0] is field 3 (state): utime is field 14, stime 15, processor 39
        out[int(tid)] = ((int(fields[11]) + int(fields[12])) / _CLK_TCK, int(fields[36]))
    return out


def process_tree(pid: int) -> list[psutil.Process]:
    """``pid`` and its descendants alive now (psutil raises NoSuchProcess for a bad PID)."""
    root = psutil.Process(pid)
    try:
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return [root]


class Sampler:
    """Samples the host and the process tree of ``pid`` on a daemon thread until stopped."""

    def __init__(self, pid: int | None, interval_s: float) -> None:
        self.pid, self.interval_s = pid, interval_s
        self.cores = psutil.cpu_count() or 1
        self._stop = threading.Event()
        self._host: list[dict[str, Any]] = []
        self._procs: dict[int, dict[str, Any]] = {}
        self._last_threads: dict[int, dict[int, tuple[float, int]]] = {}
        self._last_host: list[Any] | None = None
        self._t0 = 0.0
        self._thread = threading.Thread(target=self._run, name="lanes-sampler", daemon=True)

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._last_host = psutil.cpu_times(percpu=True)
        self._tick(first=True)
        self._thread.start()

    def stop(self) -> dict[str, Any]:
        """End sampling and return ``{"cpu": ..., "processes": ...}``."""
        self._stop.set()
        self._thread.join(timeout=5.0)
        return {
            "cpu": {"interval_s": self.interval_s, "cores": self.cores, "samples": self._host},
            "processes": {str(p): doc for p, doc in self._procs.items()},
        }

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._tick(first=False)

    def _tick(self, *, first: bool) -> None:
        t = round(time.monotonic() - self._t0, 4)
        if not first:
            now = psutil.cpu_times(percpu=True)
            assert self._last_host is not None
            self._host.append(
                {
                    "t": t,
                    "cores": [_split(a, b) for a, b in zip(self._last_host, now, strict=False)],
                }
            )
            self._last_host = now
        if self.pid is None:
            return
        try:
            procs = process_tree(self.pid)
        except psutil.Error:
            return
        for proc in procs:
            self._sample(proc, t, first=first)

    def _sample(self, proc: psutil.Process, t: float, *, first: bool) -> None:
        try:
            with proc.oneshot():
                cpu = proc.cpu_times()
                ctx = proc.num_ctx_switches()
                threads = proc.num_threads()
                doc = self._procs.get(proc.pid)
                if doc is None:
                    doc = self._procs[proc.pid] = {
                        "name": proc.name(),
                        "cmdline": " ".join(proc.cmdline())[:300],
                        "affinity": sorted(proc.cpu_affinity() or []),
                        "samples": [],
                    }
        except psutil.Error:
            return
        now = _thread_cpu(proc.pid)
        last = self._last_threads.get(proc.pid, {})
        per_core: dict[str, float] = {}
        for tid, (secs, core) in now.items():
            delta = secs - last.get(tid, (secs if first else 0.0, core))[0]
            if delta > 0:
                per_core[str(core)] = round(per_core.get(str(core), 0.0) + delta, 4)
        self._last_threads[proc.pid] = now
        doc["samples"].append(
            {
                "t": t,
                "user_s": cpu.user,
                "system_s": cpu.system,
                "threads": threads,
                "ctx_voluntary": ctx.voluntary,
                "ctx_involuntary": ctx.involuntary,
                "cpu_by_core_s": {} if first else per_core,
            }
        )


def _split(a: Any, b: Any) -> dict[str, float]:
    """One core's interval from two ``psutil.cpu_times`` readings, as fractions."""
    d = {
        k: max(0.0, getattr(b, k, 0.0) - getattr(a, k, 0.0))
        for k in b._fields
        if k not in ("guest", "guest_nice")  # already counted in user and nice
    }
    total = sum(d.values()) or 1.0
    parts = {
        "user": d.get("user", 0.0) + d.get("nice", 0.0),
        "system": d.get("system", 0.0),
        "softirq": d.get("softirq", 0.0) + d.get("irq", 0.0),
        "iowait": d.get("iowait", 0.0),
        "idle": d.get("idle", 0.0) + d.get("steal", 0.0),
    }
    return {k: round(v / total, 4) for k, v in parts.items()}
