"""What the runner collects beside the load: server metrics, CPU, the device timeline.

- :func:`metrics` reads a Prometheus text page (``lanes serve``'s ``/metrics``) with
  prometheus_client's parser into ``{(name, labels): value}``; :func:`delta` subtracts two
  scrapes (counters only grow, so after minus before is the window's count).
- :func:`model_stats` reads the Triton-style ``/v2/models/stats`` counters (``lanes.rejected``,
  ``lanes.expired``), the fallback when a server has no metrics endpoint.
- :class:`CpuSample` reads ``/proc/stat`` (per core and total) and ``/proc/<pid>/stat`` (the
  server process's user + system time); two samples give per-core busy fractions, the host's
  idle fraction and the process's CPU seconds over the window. The load generators run on the
  same host, so host figures include them; :mod:`lanes.lab.host_noise` tells the server's, the
  lab's and the rest of the host's CPU apart.
- :func:`timeline` fetches the device timeline (``/v2/trace?seconds=N``, Chrome trace JSON)
  and, given the measurement window on the Unix clock, keeps what fell inside it
  (:func:`within`): the server's window is "the last N seconds" at the fetch, which comes after
  the generators end, so without the cut a late end shifts it past the measurement.

:func:`server_block` turns before/after samples into the run file's ``server`` object
(docs/lab.md). Every fetch is bounded by a timeout; a missing endpoint gives None, not an error.
"""

from __future__ import annotations

import json
import math
import os
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from lanes.lab import host_noise

Series = dict[tuple[str, tuple[tuple[str, str], ...]], float]
"""A scrape: (sample name, sorted labels) → value."""

_TIMEOUT_S = 5.0
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def fetch(url: str, timeout: float = _TIMEOUT_S) -> bytes | None:
    """The body of a 200 answer to GET ``url``, else None."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return bytes(resp.read()) if resp.status == 200 else None
    except (urllib.error.URLError, OSError, ValueError):
        return None


def metrics(url: str | None) -> Series | None:
    """One scrape of a Prometheus endpoint, or None when it does not answer."""
    if url is None:
        return None
    body = fetch(url)
    if body is None:
        return None
    out: Series = {}
    try:
        for family in text_string_to_metric_families(body.decode("utf-8", "replace")):
            for s in family.samples:
                out[(s.name, tuple(sorted(s.labels.items())))] = float(s.value)
    except ValueError:
        return None
    return out


def delta(before: Series, after: Series) -> Series:
    """``after - before`` for every series of ``after`` (a new series counts from 0)."""
    return {k: v - before.get(k, 0.0) for k, v in after.items()}


def total(series: Series, name: str, **labels: str) -> float:
    """Sum of the samples called ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, lab), v in series.items() if n == name and want <= set(lab))


def by_label(series: Series, name: str, label: str) -> dict[str, float]:
    """Samples called ``name`` summed per value of ``label``."""
    out: dict[str, float] = {}
    for (n, lab), v in series.items():
        if n == name:
            key = dict(lab).get(label)
            if key is not None:
                out[key] = out.get(key, 0.0) + v
    return out


def model_stats(base_url: str) -> dict[str, float] | None:
    """Summed ``lanes.rejected`` and ``lanes.expired`` of ``/v2/models/stats``, or None."""
    body = fetch(base_url + "/v2/models/stats")
    if body is None:
        return None
    try:
        stats = json.loads(body)["model_stats"]
        return {
            k: float(sum(int(m.get("lanes", {}).get(k, 0)) for m in stats))
            for k in ("rejected", "expired")
        }
    except (ValueError, KeyError, TypeError):
        return None


@dataclass(frozen=True)
class CpuSample:
    """Cumulative CPU times at one instant, in seconds (``/proc``)."""

    cores: tuple[tuple[float, float], ...]
    """(busy, total) per core."""
    host: tuple[float, float]
    """(idle, total) over all cores."""
    process_s: float | None
    """The process's user + system seconds, None when it is not ours or gone."""


def cpu_sample(pid: int | None) -> CpuSample | None:
    """Read the CPU counters now; None where ``/proc`` is absent (not Linux)."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    cores: list[tuple[float, float]] = []
    host = (0.0, 0.0)
    for line in lines:
        if not line.startswith("cpu"):
            continue
        fields = [float(x) / _CLK_TCK for x in line.split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)  # idle + iowait
        tot = sum(fields[:8])  # guest time is already counted in user
        if line.startswith("cpu "):
            host = (idle, tot)
        else:
            cores.append((tot - idle, tot))
    return CpuSample(tuple(cores), host, _process_cpu(pid))


def _process_cpu(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return (float(fields[11]) + float(fields[12])) / _CLK_TCK  # utime, stime


def timeline(
    base_url: str, seconds: float, window: tuple[float, float] | None = None
) -> dict[str, Any] | None:
    """The device timeline of the last ``seconds`` (Chrome trace JSON), or None; with
    ``window`` (start, end on the Unix clock) the timeline from ``start`` to now, cut to the
    window by :func:`within`."""
    if window is not None:
        seconds = max(seconds, math.ceil(time.time() - window[0]) + 1)
    body = fetch(f"{base_url}/v2/trace?seconds={max(1, math.ceil(seconds))}", timeout=15.0)
    if body is None:
        return None
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not (isinstance(data, dict) and "traceEvents" in data):
        return None
    return data if window is None else within(data, *window)


def within(trace: dict[str, Any], start_unix: float, end_unix: float) -> dict[str, Any]:
    """``trace`` cut to the window from ``start_unix`` to ``end_unix``. **Rule:** on the trace's
    clock (``otherData.origin_unix_s`` plus ``ts`` in µs) a job slice (``X``) is kept when it
    ended inside the window, a request (its ``b``/``e`` events, by id) when its last event did,
    a counter sample (``C``) when it was taken inside; metadata (``M``) stays. ``otherData``
    then says the window (``window_s``, ``window_unix``) and counts what was kept (``jobs``,
    ``requests``). A trace without ``origin_unix_s`` is returned as it is."""
    other = trace.get("otherData") or {}
    origin = other.get("origin_unix_s")
    if not isinstance(origin, (int, float)):
        return trace
    lo, hi = (start_unix - origin) * 1e6, (end_unix - origin) * 1e6
    last: dict[Any, float] = {}
    for ev in trace["traceEvents"]:
        if ev.get("ph") in ("b", "e"):
            key = (ev.get("cat"), ev.get("id"))
            last[key] = max(last.get(key, ev["ts"]), ev["ts"])

    def keep(ev: dict[str, Any]) -> bool:
        ph = ev.get("ph")
        if ph == "X":
            at = float(ev["ts"]) + float(ev.get("dur", 0.0))
        elif ph in ("b", "e"):
            at = last[(ev.get("cat"), ev.get("id"))]
        elif ph == "C":
            at = float(ev["ts"])
        else:
            return True
        return lo <= at <= hi

    events = [ev for ev in trace["traceEvents"] if keep(ev)]
    requests = {(ev.get("cat"), ev.get("id")) for ev in events if ev.get("ph") == "b"}
    other = {
        **other,
        "window_s": round(end_unix - start_unix, 6),
        "window_unix": [start_unix, end_unix],
        "jobs": sum(1 for ev in events if ev.get("ph") == "X"),
        "requests": len(requests),
    }
    return {**trace, "traceEvents": events, "otherData": other}


def server_block(
    before: Mapping[str, Any], after: Mapping[str, Any], window_s: float
) -> dict[str, Any] | None:
    """The run file's ``server`` object from two samples ``{"metrics", "stats", "cpu"}``.

    Counters come from ``/metrics`` when both scrapes have it, else from ``/v2/models/stats``;
    CPU from ``/proc``, with the metrics' ``process_cpu_seconds_total`` when the process is not
    ours. None when nothing at all could be read.
    """
    out: dict[str, Any] = {"rejected": None, "expired": None, "device": {}}
    t0, t1 = before.get("t"), after.get("t")
    # The counters' own window: from the 'before' scrape to the 'after' one, the runner's
    # samples at the measurement window's start and end (a fetch's time apart from it).
    has_times = isinstance(t0, (int, float)) and isinstance(t1, (int, float)) and t1 > t0
    out["window_s"] = float(t1 - t0) if has_times else window_s  # type: ignore[operator]
    m0, m1 = before.get("metrics"), after.get("metrics")
    d = delta(m0, m1) if m0 is not None and m1 is not None else None
    s0, s1 = before.get("stats"), after.get("stats")
    if d is not None and any(n == "lanes_requests_total" for n, _ in d):
        out["rejected"] = int(total(d, "lanes_requests_total", outcome="rejected_queue_full"))
        out["expired"] = int(total(d, "lanes_requests_total", outcome="deadline_exceeded"))
    elif s0 is not None and s1 is not None:
        out["rejected"] = int(s1["rejected"] - s0["rejected"])
        out["expired"] = int(s1["expired"] - s0["expired"])
    if d is not None:
        busy = by_label(d, "lanes_device_busy_seconds_total", "device")
        fields = {
            "idle_while_waiting_s": "lanes_device_idle_while_waiting_seconds_total",
            "overlap_s": "lanes_device_overlap_seconds_total",
            "jobs": "lanes_device_jobs_total",
        }
        per = {k: by_label(d, name, "device") for k, name in fields.items()}
        for dev in sorted(set(busy).union(*per.values())):
            entry: dict[str, float | None] = {"busy_s": busy.get(dev)}
            entry.update({k: per[k].get(dev) for k in fields})
            out["device"][dev] = entry
    c0, c1 = before.get("cpu"), after.get("cpu")
    out["process_cpu_s"] = None
    out["cpu_busy_per_core"] = []
    out["host_cpu_idle"] = None
    if isinstance(c0, CpuSample) and isinstance(c1, CpuSample):
        if c0.process_s is not None and c1.process_s is not None:
            out["process_cpu_s"] = c1.process_s - c0.process_s
        out["cpu_busy_per_core"] = [
            _frac(b1 - b0, t1 - t0) for (b0, t0), (b1, t1) in zip(c0.cores, c1.cores, strict=False)
        ]
        out["host_cpu_idle"] = _frac(c1.host[0] - c0.host[0], c1.host[1] - c0.host[1])
    if out["process_cpu_s"] is None and d is not None:
        cpu = total(d, "process_cpu_seconds_total")
        out["process_cpu_s"] = cpu if any(n == "process_cpu_seconds_total" for n, _ in d) else None
    out.update(host_noise.noise(before.get("host"), after.get("host"), out["window_s"]))
    found = d is not None or out["rejected"] is not None or out["host_cpu_idle"] is not None
    return out if found else None


def _frac(part: float, whole: float) -> float:
    return min(1.0, max(0.0, part / whole)) if whole > 0 else 0.0
