"""Health probing of a fleet: :func:`start` the native prober (crates/lanes-probe) and read what
it finds.

The prober runs on a thread of its own (``syn`` mode: half-open SYN probes from a raw socket,
replies read from a BPF-filtered packet socket; ``connect`` mode: plain connects). Python reads
its messages in order with :meth:`Run.poll` — :class:`Event` (a target changed state),
:class:`Notice` (a log line) and :class:`Round` (one round's counts) — and may ask it to
:meth:`~Run.reload` its targets file or :meth:`~Run.stop`. Every wait releases the GIL.
The state machine's rule and the modes are described in docs/probe.md.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from lanes import _core

__all__ = ["Event", "Notice", "Round", "Run", "spec", "start"]


def iso_time(at: float) -> str:
    """Seconds since the epoch as ISO 8601 UTC with milliseconds: ``2026-11-22T10:00:00.123Z``."""
    moment = datetime.fromtimestamp(at, tz=timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Event:
    """A target changed state; ``previous`` is ``None`` for its initial state."""

    target: str
    name: str | None
    state: str
    previous: str | None
    at: float
    round: int

    def to_dict(self) -> dict[str, Any]:
        """The event as ``--json`` prints it and the webhook posts it."""
        return {
            "target": self.target,
            "name": self.name,
            "state": self.state,
            "previous": self.previous,
            "at": iso_time(self.at),
        }

    def to_json(self) -> str:
        """One JSON line: ``{"target", "name", "state", "previous", "at"}``."""
        return json.dumps(self.to_dict())

    def to_text(self) -> str:
        """A readable line: time, target (name), state, and what it was."""
        who = self.target if self.name is None else f"{self.target} ({self.name})"
        was = "" if self.previous is None else f" (was {self.previous})"
        return f"{iso_time(self.at)}  {who}  {self.state}{was}"


@dataclass(frozen=True)
class Notice:
    """A log line of the prober: ``level`` is ``info`` or ``warning``."""

    level: str
    message: str


@dataclass(frozen=True)
class Round:
    """What one round did and found (field meanings: docs/probe.md, "Round reports")."""

    round: int
    duration_s: float
    targets: int
    sent: int
    replies: int
    accepted: int
    refused: int
    timeouts: int
    unknown: int
    late: int
    duplicates: int
    strays: int
    errors: int
    kernel_packets: int
    kernel_drops: int
    up: int
    down: int
    refused_targets: int
    pending: int
    transitions: int

    def to_text(self) -> str:
        """A one-line summary."""
        return (
            f"round {self.round}: {self.sent:,} probes, {self.replies:,} replies in "
            f"{self.duration_s * 1e3:.1f} ms; up {self.up:,}, down {self.down:,}, "
            f"refused {self.refused_targets:,}, pending {self.pending:,}; kernel "
            f"{self.kernel_packets:,} packets, {self.kernel_drops:,} drops"
        )


Message = Event | Notice | Round

_ROUND_FIELDS = {f.name for f in fields(Round)}


def _message(raw: dict[str, Any]) -> Message:
    kind = raw.pop("kind")
    if kind == "event":
        return Event(**raw)
    if kind == "notice":
        return Notice(**raw)
    return Round(**{k: v for k, v in raw.items() if k in _ROUND_FIELDS})


def spec(
    targets: str | os.PathLike[str],
    *,
    interval: float = 1.0,
    timeout: float | None = None,
    mode: str = "syn",
    down_after: int = 3,
    up_after: int = 2,
    flap_window: int = 60,
    rounds: int | None = None,
    recv_buffer: int | None = None,
    connect_concurrency: int | None = None,
    metrics_port: int | None = None,
    metrics_host: str | None = None,
    simulate_no_raw: bool = False,
) -> dict[str, Any]:
    """The prober's spec; times in seconds. Defaults as in docs/probe.md."""
    out: dict[str, Any] = {
        "targets": str(Path(targets)),
        "interval_s": interval,
        "timeout_s": timeout,
        "mode": mode,
        "down_after": down_after,
        "up_after": up_after,
        "flap_window": flap_window,
        "rounds": rounds,
        "recv_buffer": recv_buffer,
        "connect_concurrency": connect_concurrency,
        "metrics_port": metrics_port,
        "metrics_host": metrics_host,
        "simulate_no_raw": simulate_no_raw,
    }
    return {k: v for k, v in out.items() if v is not None}


class Run:
    """A probe run in progress (from :func:`start`)."""

    def __init__(self, native: _core.ProbeRun) -> None:
        self._native = native

    @property
    def mode(self) -> str:
        """The mode in use: ``syn``, or ``connect`` (asked for, or after a fallback)."""
        return self._native.mode

    @property
    def metrics_address(self) -> tuple[str, int] | None:
        """``(host, port)`` of the metrics endpoint, if one was asked for."""
        return self._native.metrics_address

    def poll(self, timeout: float) -> list[Message] | None:
        """Waits up to ``timeout`` seconds for messages and returns every one waiting, in
        order (``[]`` if none came); ``None`` once the run has ended and all were read."""
        raw = self._native.poll(timeout)
        return None if raw is None else [_message(m) for m in raw]

    def reload(self) -> None:
        """Reloads the targets file before the next round."""
        self._native.reload()

    def stop(self) -> None:
        """Stops probing at once (a round in progress is abandoned)."""
        self._native.stop()

    def wait(self, timeout: float) -> bool:
        """Waits up to ``timeout`` seconds; true once the run has ended."""
        return self._native.wait(timeout)

    def result(self) -> None:
        """Waits for the end; raises :class:`~lanes.errors.LanesError` if the run failed."""
        self._native.result()

    def metrics(self) -> str:
        """The metrics as OpenMetrics text."""
        return self._native.metrics()


def start(targets: str | os.PathLike[str], **options: Any) -> Run:
    """Loads the targets, opens the sockets and starts probing; see :func:`spec`.

    Raises :class:`~lanes.errors.LanesError` (``bad_argument``, ``targets_invalid``,
    ``io_error``, ``socket_failed``, ``metrics_bind_failed``) before any probe is sent.
    """
    return Run(_core.probe_start(spec(targets, **options)))
