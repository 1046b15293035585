"""The device timeline: finished jobs in a ring buffer, exported as Chrome trace-event JSON.

The dispatcher records every finished job (one batch on one device): the device, the model, its
rows and requests, when it was dispatched and when it completed (monotonic ns), the engine's
estimated cost at dispatch, the measured device time, and the queue wait of its oldest request.
The buffer is a ``collections.deque`` of at most ``trace_events`` jobs: the oldest are dropped
first, so memory stays bounded (~300 bytes a job: the default 200,000 jobs hold ~60 MB at most).

Export (:func:`chrome_trace`) follows the Trace Event Format that Perfetto and chrome://tracing
open: ``{"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}`` with

- metadata events (``"ph": "M"``): the process is named ``lanes serve``, and each device is one
  thread track (``tid`` = the device's index) named after it (``cpu:0``, ``sim:1``, ``cuda:0``);
- one complete event (``"ph": "X"``, ``ts``/``dur`` in µs from the timeline's origin) per job,
  named after the model, with args ``model``, ``batch_size``, ``requests``, ``estimated_ms``,
  ``measured_ms``, ``queue_wait_ms`` (and ``failed`` when the model raised);
- counter events (``"ph": "C"``, name ``jobs <device>``, args ``{"jobs": n}``) at every instant
  a device's number of concurrent jobs changes. They are derived from the jobs' intervals (at
  equal times, ends count before starts), so they agree with the slices by construction; within
  an exported window they are exact (every job that overlaps the window is exported whole).

A window of the last N seconds (``GET /v2/trace?seconds=N``) holds the jobs that completed within
it. Copying the ring happens on the event loop (it is only ever changed there); building and
encoding the JSON happens on a worker thread, as does writing ``--trace FILE`` (a temporary file
beside it, then ``os.replace``: a reader never sees half a file).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import tempfile
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from lanes.errors import BAD_ARGUMENT, OUTPUT_FAILED, LanesError
from lanes.serving.codec import parse_decimal

DEFAULT_SECONDS = 10.0
MAX_SECONDS = 86_400.0
"""``GET /v2/trace?seconds=N`` takes N in (0, 86400]; the default is 10."""
log = logging.getLogger("lanes.serve")


class Job(NamedTuple):
    """One finished job: a batch of one model on one device."""

    device: int
    model: str
    rows: int
    requests: int
    start_ns: int  # dispatched (monotonic)
    end_ns: int  # completed (monotonic)
    estimated_ns: int
    measured_ns: int
    queue_wait_ns: int
    failed: bool = False


class Timeline:
    """A bounded ring of finished jobs (see the module docs)."""

    def __init__(self, capacity: int, devices: Sequence[str], meta: dict[str, Any]) -> None:
        self.jobs: deque[Job] = deque(maxlen=capacity)
        self.devices = list(devices)
        self.meta = dict(meta)
        self.recorded = 0
        self.origin_ns = time.monotonic_ns()
        self.origin_unix_s = time.time()

    def record(self, job: Job) -> None:
        """Keep a finished job (event loop only)."""
        self.jobs.append(job)
        self.recorded += 1

    def window(self, seconds: float | None, now_ns: int | None = None) -> list[Job]:
        """The jobs that completed in the last ``seconds`` (None: all), oldest first.
        Event loop only: the ring is in completion order, so this walks back from the end."""
        if seconds is None:
            return list(self.jobs)
        now = time.monotonic_ns() if now_ns is None else now_ns
        cutoff = now - int(seconds * 1e9)
        tail: list[Job] = []
        for job in reversed(self.jobs):
            if job.end_ns < cutoff:
                break
            tail.append(job)
        tail.reverse()
        return tail

    def trace(self, jobs: Sequence[Job], seconds: float | None = None) -> dict[str, Any]:
        """The Chrome trace of ``jobs`` (any thread: touches no shared state but constants)."""
        other = {
            **self.meta,
            "devices": self.devices,
            "clock": "monotonic; ts in µs from the timeline's origin",
            "origin_unix_s": self.origin_unix_s,
            "jobs": len(jobs),
            "window_s": seconds,
            "dropped": self.recorded - len(self.jobs),
            "capacity": self.jobs.maxlen,
        }
        return chrome_trace(jobs, self.devices, self.origin_ns, other)

    async def export(self, seconds: float | None) -> bytes:
        """The last ``seconds`` (None: the whole ring) as JSON bytes, encoded off the loop."""
        jobs = self.window(seconds)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, lambda: _encode(self.trace(jobs, seconds)))

    async def save(self, path: Path) -> None:
        """:meth:`write`, logging a failure instead of raising it (at exit)."""
        try:
            await self.write(path)
        except LanesError as err:
            log.error("%s", err.message)
        else:
            log.info("timeline: %d jobs written to %s", len(self.jobs), path)

    async def write(self, path: Path) -> None:
        """Write the whole ring to ``path`` atomically, off the event loop."""
        jobs = self.window(None)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, lambda: _write(path, _encode(self.trace(jobs))))


def chrome_trace(
    jobs: Sequence[Job], devices: Sequence[str], origin_ns: int, other: dict[str, Any]
) -> dict[str, Any]:
    """Trace-event JSON for ``jobs`` on ``devices`` (see the module docs for the events)."""
    pid = os.getpid()
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": "lanes serve"}}
    ]
    for i, name in enumerate(devices):
        events.append(
            {"name": "thread_name", "ph": "M", "pid": pid, "tid": i, "args": {"name": name}}
        )
        events.append(
            {
                "name": "thread_sort_index",
                "ph": "M",
                "pid": pid,
                "tid": i,
                "args": {"sort_index": i},
            }
        )
    changes: list[tuple[int, int, int]] = []  # (ns, delta, device)
    for j in jobs:
        args: dict[str, Any] = {
            "model": j.model,
            "batch_size": j.rows,
            "requests": j.requests,
            "estimated_ms": j.estimated_ns / 1e6,
            "measured_ms": j.measured_ns / 1e6,
            "queue_wait_ms": j.queue_wait_ns / 1e6,
        }
        if j.failed:
            args["failed"] = True
        events.append(
            {
                "name": j.model,
                "cat": "job",
                "ph": "X",
                "ts": (j.start_ns - origin_ns) / 1e3,
                "dur": max(0, j.end_ns - j.start_ns) / 1e3,
                "pid": pid,
                "tid": j.device,
                "args": args,
            }
        )
        changes.append((j.start_ns, 1, j.device))
        changes.append((j.end_ns, -1, j.device))
    events.extend(_counters(changes, devices, origin_ns, pid))
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": other}


def _counters(
    changes: list[tuple[int, int, int]], devices: Sequence[str], origin_ns: int, pid: int
) -> list[dict[str, Any]]:
    """One counter event per (device, instant) at which the device's job count changes."""
    changes.sort(key=lambda c: (c[2], c[0], c[1]))  # per device, by time, ends first
    out: list[dict[str, Any]] = []
    count: dict[int, int] = {}
    i = 0
    while i < len(changes):
        ns, _, device = changes[i]
        before = count.get(device, 0)
        n = before
        while i < len(changes) and changes[i][0] == ns and changes[i][2] == device:
            n += changes[i][1]
            i += 1
        count[device] = n
        if n != before:
            out.append(
                {
                    "name": f"jobs {devices[device]}",
                    "ph": "C",
                    "ts": (ns - origin_ns) / 1e3,
                    "pid": pid,
                    "tid": device,
                    "args": {"jobs": n},
                }
            )
    return out


def parse_seconds(text: str | None) -> float:
    """``seconds`` of ``GET /v2/trace``: default 10, a number in (0, 86400]."""
    if text is None:
        return DEFAULT_SECONDS
    value = parse_decimal(text)
    if value is None or not 0 < value <= MAX_SECONDS:
        raise LanesError(
            BAD_ARGUMENT,
            f"seconds = {text!r}: must be a number of seconds in (0, {MAX_SECONDS:g}] "
            f"(default {DEFAULT_SECONDS:g})",
        )
    return value


def check_trace_path(path: Path) -> None:
    """Refuse a ``--trace`` file whose folder does not exist (checked at start, not at exit)."""
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise LanesError(
            BAD_ARGUMENT, f"trace = '{path}': folder '{folder}' does not exist (see --trace)"
        )


def _encode(trace: dict[str, Any]) -> bytes:
    return json.dumps(trace, separators=(",", ":")).encode()


def _write(path: Path, data: bytes) -> None:
    folder = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as err:
        raise LanesError(
            OUTPUT_FAILED, f"trace = '{path}': cannot write: {err.strerror or err}"
        ) from None
