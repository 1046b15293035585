"""Logging for ``lanes serve``: off the hot path, bounded, text or JSON lines.

Rule (design.md §4.9): no request ever waits on a log write. Every record goes through a
:class:`logging.handlers.QueueHandler` into a bounded :class:`queue.Queue`; one
:class:`logging.handlers.QueueListener` thread formats and writes them. When a burst outruns the
writer (an error storm, a stalled pipe), the queue is full and new records are **dropped and
counted**, never waited for. A drop summary (``dropped N log records``) is logged at the next
record that gets through at least :data:`REPORT_EVERY_S` seconds after the last summary, and the
total is written at exit by :meth:`Logs.close`.

Formats: ``text`` — ``2025-01-01T12:00:00.123Z INFO lanes.serve: message key=value ...``;
``json`` — one object per line with ``ts`` (ISO 8601, UTC), ``level``, ``logger``, ``message``
and every extra field given with ``extra={...}`` (e.g. the access log's ``method``, ``path``,
``status``, ``duration_ms``, ``model``).

Loggers: ``lanes.serve`` (lifecycle, warm-up, errors) and ``lanes.access`` (one line per request
when the access log is on: ``--access-log``; off by default).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import logging.handlers
import queue
import sys
import time
from datetime import datetime, timezone
from typing import Any, TextIO

QUEUE_RECORDS = 10_000
"""Records the log queue holds before it drops new ones."""
REPORT_EVERY_S = 10.0
"""Smallest interval between two drop summaries."""
CLOSE_S = 5.0
"""At exit, how long the writer may take to make room for the stop mark of a full queue."""
ACCESS = "lanes.access"
SERVE = "lanes.serve"

# Attributes every LogRecord has; anything else on a record is an ``extra`` field.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


def extras(record: logging.LogRecord) -> dict[str, Any]:
    """The fields given to a log call with ``extra={...}``."""
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


def _timestamp(record: logging.LogRecord) -> str:
    when = datetime.fromtimestamp(record.created, tz=timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(record.msecs):03d}Z"


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``ts``, ``level``, ``logger``, ``message``, extra fields."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": _timestamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        line.update(extras(record))
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


class TextFormatter(logging.Formatter):
    """``ts LEVEL logger: message key=value ...`` (extra fields appended as ``key=value``)."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"{_timestamp(record)} {record.levelname} {record.name}: {record.getMessage()}"
        fields = extras(record)
        if fields:
            line += " " + " ".join(f"{k}={v}" for k, v in fields.items())
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class DroppingQueueHandler(logging.handlers.QueueHandler):
    """A QueueHandler that drops (and counts) a record when the queue is full, never blocking.

    The record is queued as logged (not pre-formatted), so the writer thread does the formatting;
    the message is resolved here so mutable arguments cannot change under it.
    """

    def __init__(self, q: queue.Queue[Any]) -> None:
        super().__init__(q)
        self._drops = itertools.count()  # next() is atomic under the GIL
        self._dropped = 0
        self._reported = 0
        self._last_report = time.monotonic()

    @property
    def dropped(self) -> int:
        """Records dropped so far."""
        return self._dropped

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        record.msg = record.getMessage()
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        record.exc_info = None
        return record

    def enqueue(self, record: logging.LogRecord) -> None:
        try:
            self.queue.put_nowait(record)
        except queue.Full:
            self._dropped = next(self._drops) + 1
            return
        if self._dropped > self._reported and time.monotonic() - self._last_report >= (
            REPORT_EVERY_S
        ):
            self._report()

    def _report(self) -> None:
        newly = self._dropped - self._reported
        self._reported = self._dropped
        self._last_report = time.monotonic()
        summary = logging.LogRecord(
            SERVE,
            logging.WARNING,
            __file__,
            0,
            "dropped %d log records (queue full)",
            (newly,),
            None,
        )
        summary.dropped = newly
        summary.dropped_total = self._dropped
        try:
            self.queue.put_nowait(summary)
        except queue.Full:  # reported next time
            self._reported -= newly


class _Listener(logging.handlers.QueueListener):
    """A QueueListener whose stop mark waits (up to :data:`CLOSE_S`) for room in a full queue
    rather than failing; a writer stalled longer raises ``queue.Full`` from :meth:`stop`."""

    def enqueue_sentinel(self) -> None:
        q = self.queue
        assert isinstance(q, queue.Queue)
        q.put(getattr(self, "_sentinel", None), timeout=CLOSE_S)


class Logs:
    """The logging of one ``lanes serve`` process (see the module docstring); :meth:`close`
    flushes it, reports drops and restores the previous configuration."""

    def __init__(
        self,
        fmt: str = "text",
        level: str = "info",
        access_log: bool = False,
        stream: TextIO | None = None,
        queue_records: int = QUEUE_RECORDS,
        writer: logging.Handler | None = None,
    ) -> None:
        if fmt not in ("text", "json"):
            from lanes.errors import BAD_ARGUMENT, LanesError

            raise LanesError(BAD_ARGUMENT, f"log_format = {fmt!r}: allowed are text, json")
        self.writer = writer or logging.StreamHandler(stream or sys.stderr)
        self.writer.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=queue_records)
        self.handler = DroppingQueueHandler(self.queue)
        self.listener = _Listener(self.queue, self.writer, respect_handler_level=False)
        self._loggers = [logging.getLogger("lanes"), logging.getLogger(ACCESS)]
        self._saved = [(lg.level, lg.propagate, list(lg.handlers)) for lg in self._loggers]
        lanes, access = self._loggers
        lanes.handlers = [self.handler]
        lanes.setLevel(level.upper())
        lanes.propagate = False
        # The access log is lanes.access at INFO: on with --access-log, else above CRITICAL.
        access.setLevel(logging.INFO if access_log else logging.CRITICAL + 1)
        self.access_log = access_log
        self.listener.start()

    @property
    def dropped(self) -> int:
        return self.handler.dropped

    def close(self) -> int:
        """Write what is queued, then the total of dropped records (if any); returns it. A writer
        stalled for :data:`CLOSE_S` is left behind (its thread is a daemon)."""
        with contextlib.suppress(queue.Full):
            self.listener.stop()
        dropped = self.handler.dropped
        if dropped:
            record = logging.LogRecord(
                SERVE,
                logging.WARNING,
                __file__,
                0,
                "dropped %d log records in all",
                (dropped,),
                None,
            )
            record.dropped_total = dropped
            self.writer.handle(record)
        self.writer.flush()
        for lg, (lvl, prop, handlers) in zip(self._loggers, self._saved, strict=True):
            lg.setLevel(lvl)
            lg.propagate = prop
            lg.handlers = handlers
        return dropped
