"""Runs the native load engine from Python: :func:`start` and :func:`run`.

The engine (crates/lanes-load) runs on threads of its own; Python only starts it, polls its
progress and collects its result, and every blocking call releases the GIL. :func:`run` stops
the engine on Ctrl-C (``KeyboardInterrupt``) and still returns what was measured, marked
``interrupted``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lanes import _core
from lanes.bench.result import Result

_POLL_S = 0.1
"""Longest wait between two looks for Ctrl-C while a run goes on."""


@dataclass(frozen=True)
class Progress:
    """Live counts of a run."""

    elapsed_s: float
    sent: int
    replies: int
    errors: int
    finished: bool


def _path(p: str | os.PathLike[str] | None) -> str | None:
    return None if p is None else str(Path(p))


def spec(
    url: str,
    *,
    rate: float | None = None,
    arrival: str = "poisson",
    connections: int | None = None,
    threads: int | None = None,
    duration: float | None = None,
    requests: int | None = None,
    timeout: float = 10.0,
    method: str | None = None,
    headers: Sequence[str] | Mapping[str, str] = (),
    body: str | None = None,
    body_file: str | os.PathLike[str] | None = None,
    corpus: str | os.PathLike[str] | None = None,
    corpus_order: str = "random",
    seed: int = 1,
    late_after: float = 0.001,
    send_log: str | os.PathLike[str] | None = None,
    frame_hello: str | os.PathLike[str] | None = None,
    frame_seq: bool = False,
    grpc_connections: int | None = None,
    kserve_model: str | None = None,
) -> dict[str, Any]:
    """The engine's run spec (docs/bench.md); times in seconds. ``rate`` selects open loop.

    Frame targets only: ``frame_hello`` is a file whose bytes are one payload sent once on each
    new connection (its reply is not recorded); ``frame_seq`` makes every body a sequence of
    whole length-prefixed frames, each sent after the previous reply, timed as one exchange.

    gRPC targets only (``grpc://HOST:PORT[/pkg.Service/Method]``): ``grpc_connections`` is the
    number of HTTP/2 connections per sender thread (default 1) that the ``connections`` streams
    share; ``kserve_model`` names the model of a KServe v2 REST body (JSON or the binary
    extension) that is sent as a ``ModelInferRequest`` (corpus entries whose path is a REST infer
    path are converted with the model that path names).
    """
    if isinstance(headers, Mapping):
        header_lines = [f"{k}: {v}" for k, v in headers.items()]
    elif isinstance(headers, str):  # one "Name: value" line, not a sequence of characters
        header_lines = [headers]
    else:
        header_lines = list(headers)
    out: dict[str, Any] = {
        "url": url,
        "rate": rate,
        "arrival": arrival,
        "connections": connections,
        "threads": threads,
        "duration_s": duration,
        "requests": requests,
        "timeout_s": timeout,
        "method": method,
        "headers": header_lines,
        "body": body,
        "body_file": _path(body_file),
        "corpus": _path(corpus),
        "corpus_order": corpus_order,
        "seed": seed,
        "late_after_s": late_after,
        "send_log": _path(send_log),
        "frame_hello": _path(frame_hello),
        "frame_seq": frame_seq or None,
        "grpc_connections": grpc_connections,
        "kserve_model": kserve_model,
    }
    return {k: v for k, v in out.items() if v is not None}


class Handle:
    """A run in progress (from :func:`start`)."""

    def __init__(self, native: _core.LoadRun) -> None:
        self._native = native

    def progress(self) -> Progress:
        """Live counts."""
        return Progress(**self._native.progress())

    def stop(self) -> None:
        """Ends the run now; requests in flight are abandoned (counted as unfinished)."""
        self._native.stop()

    def wait(self, timeout: float) -> bool:
        """Waits up to ``timeout`` seconds; true once the run has ended."""
        return self._native.wait(timeout)

    def result(self) -> Result:
        """Waits for the end and returns the result."""
        return Result.from_json(self._native.result())


def start(url: str, **options: Any) -> Handle:
    """Checks the options, opens the connections and starts a run; see :func:`spec`.

    Raises :class:`~lanes.errors.LanesError` (``bad_url``, ``bad_argument``,
    ``corpus_invalid``, ``connect_failed``) before any request is sent.
    """
    return Handle(_core.load_start(spec(url, **options)))


def run(
    url: str,
    *,
    on_progress: Callable[[Progress], None] | None = None,
    interval: float = 1.0,
    **options: Any,
) -> Result:
    """Runs a load test to its bound and returns its result; see :func:`spec` for options.

    ``on_progress`` is called about every ``interval`` seconds. Ctrl-C stops the run; the
    partial result is returned with ``interrupted`` set.
    """
    handle = start(url, **options)
    poll = min(interval, _POLL_S)  # short waits, so Ctrl-C is seen at once
    next_report = time.monotonic() + interval
    try:
        while not handle.wait(poll):
            if on_progress is not None and time.monotonic() >= next_report:
                on_progress(handle.progress())
                next_report += interval
    except KeyboardInterrupt:
        handle.stop()
    return handle.result()
