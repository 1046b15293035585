"""Arrival traces: files of request timestamps, turned into seconds since the first arrival.

Two formats are read, told apart by the first line that is not blank or a comment:

- **plain** — one timestamp in seconds per line (any number, e.g. ``12.5``). ``#`` starts a
  comment, blank lines are skipped.
- **CSV with a header** — the first line is a header; in each following row the first column is
  the timestamp, either a number of seconds or a date-time ``YYYY-MM-DD HH:MM:SS[.fraction]``
  (``T`` also separates date and time; any number of fractional digits, as in the Azure LLM
  inference trace's ``2023-11-16 18:17:03.9799600``). Other columns are ignored.

Date-times are parsed by hand to integer nanoseconds (``datetime.fromisoformat`` on Python 3.10
refuses 7 fractional digits, and a float of seconds since 1970 would lose the last digits), and
carry no time zone: only differences matter. The result is sorted and shifted so that the first
arrival is at 0.0; a trace needs at least two arrivals spanning a positive time. The simulator
rescales it to each service's arrival rate and loops it when it is too short.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from pathlib import Path

from lanes.errors import TRACE_INVALID, LanesError

_DATETIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]00:?00)?"
)
_EPOCH = dt.datetime(1970, 1, 1)
_NS = 1_000_000_000


class TraceFormatError(ValueError):
    """A trace's content is malformed; the message names the line and the value."""


def parse_trace(text: str) -> tuple[float, ...]:
    """Arrival times in seconds, sorted, the first one 0.0, from a trace file's ``text``.

    Raises :class:`TraceFormatError` naming the first bad line.
    """
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if _strip_comment(line)), None)
    if first is None:
        raise TraceFormatError("no timestamps (the file is empty)")
    times: list[float] | list[int]
    if _number(_strip_comment(lines[first])) is not None:
        times = _parse_plain(lines, first)
    else:
        times = _parse_csv(lines, first)
    if len(times) < 2:
        raise TraceFormatError(f"{len(times)} timestamp: needs at least 2 to define a rate")
    times.sort()
    t0 = times[0]
    if times[-1] == t0:
        raise TraceFormatError("all timestamps are equal: needs a positive time span")
    if isinstance(t0, int):
        return tuple((t - t0) / _NS for t in times)
    return tuple(float(t - t0) for t in times)


def load_trace(path: Path) -> tuple[float, ...]:
    """Read and parse the trace file at ``path``; raises ``LanesError("trace_invalid", ...)``."""
    try:
        text = path.read_text(encoding="utf-8")
        return parse_trace(text)
    except OSError as err:
        raise LanesError(TRACE_INVALID, f"trace {path}: {err.strerror or err}") from err
    except (UnicodeDecodeError, TraceFormatError) as err:
        raise LanesError(TRACE_INVALID, f"trace {path}: {err}") from err


def _strip_comment(line: str) -> str:
    return line.split("#", 1)[0].strip()


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _parse_plain(lines: list[str], start: int) -> list[float]:
    out: list[float] = []
    for i in range(start, len(lines)):
        text = _strip_comment(lines[i])
        if not text:
            continue
        value = _number(text)
        if value is None:
            raise TraceFormatError(f"line {i + 1}: {text!r} is not a number of seconds")
        out.append(value)
    return out


def _parse_csv(lines: list[str], header: int) -> list[float] | list[int]:
    """Rows after the header; all numbers (seconds) or all date-times (integer nanoseconds)."""
    seconds: list[float] = []
    nanos: list[int] = []
    for i in range(header + 1, len(lines)):
        line = lines[i].strip()
        if not line:
            continue
        field = line.split(",", 1)[0].strip().strip('"').strip()
        value = _number(field)
        if value is not None and not nanos:
            seconds.append(value)
            continue
        ns = _datetime_ns(field)
        if ns is not None and not seconds:
            nanos.append(ns)
            continue
        if seconds:
            expected = "a number of seconds, like the rows above"
        elif nanos:
            expected = "a date-time, like the rows above"
        else:
            expected = "a number of seconds or a date-time like 2023-11-16 18:17:03.9799600"
        raise TraceFormatError(f"line {i + 1}: {field!r} is not {expected}")
    return nanos if nanos else seconds


def _datetime_ns(text: str) -> int | None:
    """Nanoseconds since 1970-01-01 (no time zone) of ``YYYY-MM-DD HH:MM:SS[.frac]``."""
    match = _DATETIME.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    try:
        whole = dt.datetime(year, month, day, hour, minute, second)
    except ValueError:
        return None
    frac = (match.group(7) or "")[:9].ljust(9, "0")
    delta = whole - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * _NS + int(frac)
