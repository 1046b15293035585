"""The result of a load run: the engine's JSON result, with typed access to what people read.

The dict is exactly what ``lanes bench --json`` writes (docs/bench.md lists every field):
``mode``, ``requests``, ``duration_s``, ``rps``, ``latency_ms`` and ``service_time_ms``
(``mean p50 p75 p90 p99 p999 max``), ``late_sends_fraction``, ``errors`` by class
(``connect read write status timeout``), ``timeseries`` (one point per second), and, under
``histograms``, every HdrHistogram encoded so that results of several processes merge exactly
(:func:`merge`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from lanes import _core

PERCENTILE_KEYS = ("mean", "p50", "p75", "p90", "p99", "p999", "max")
"""Keys of ``latency_ms`` and ``service_time_ms``."""
ERROR_CLASSES = ("connect", "read", "write", "status", "timeout")
"""Keys of ``errors``."""


@dataclass(frozen=True)
class Result:
    """One run's result (or several runs merged)."""

    data: Mapping[str, Any]

    @classmethod
    def from_json(cls, text: str) -> Result:
        """A result from the engine's (or ``--json``'s) JSON text."""
        return cls(json.loads(text))

    def to_json(self, *, indent: int | None = 2) -> str:
        """The result as JSON text, as ``lanes bench --json`` writes it."""
        return json.dumps(self.data, indent=indent)

    @property
    def mode(self) -> str:
        """``"open"`` (open loop) or ``"closed"`` (closed loop)."""
        return str(self.data["mode"])

    @property
    def requests(self) -> int:
        """Replies received, of any status."""
        return int(self.data["requests"])

    @property
    def rps(self) -> float:
        """Replies per second."""
        return float(self.data["rps"])

    @property
    def latency_ms(self) -> dict[str, float]:
        """Latency from the intended send time: ``mean p50 p75 p90 p99 p999 max``."""
        return dict(self.data["latency_ms"])

    @property
    def service_time_ms(self) -> dict[str, float]:
        """Service time from the actual send time, same keys as :attr:`latency_ms`."""
        return dict(self.data["service_time_ms"])

    @property
    def errors(self) -> dict[str, int]:
        """Errors by class: ``connect read write status timeout``."""
        return dict(self.data["errors"])

    @property
    def late_sends_fraction(self) -> float:
        """Share of sends that left later than ``late_after_ms`` behind the schedule."""
        return float(self.data["late_sends_fraction"])

    @property
    def interrupted(self) -> bool:
        """True when the run was stopped before its bound."""
        return bool(self.data["interrupted"])

    def percentile_distribution(self, which: Literal["latency", "service_time"] = "latency") -> str:
        """HdrHistogram's percentile-distribution text (values in ms), for its plotter."""
        return _core.load_percentiles(json.dumps(self.data), which)


def merge(results: Iterable[Result]) -> Result:
    """One result from runs made side by side: histograms and counts add exactly."""
    texts = [json.dumps(r.data) for r in results]
    return Result.from_json(_core.load_merge(texts))
