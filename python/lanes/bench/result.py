"""The result of a load run: the engine's JSON result, with typed access to what people read.

The dict is exactly what ``lanes bench --json`` writes (docs/bench.md lists every field):
``mode``, ``requests``, ``duration_s``, ``rps``, ``latency_ms`` and ``service_time_ms``
(``mean p50 p75 p90 p99 p999 max``), ``late_sends_fraction``, ``errors`` by class
(``connect read write status timeout``), ``timeseries`` (one point per second), ``sends_10ms``
(the requests actually sent in each 10 ms bin: :meth:`Result.sends_binned`,
:meth:`Result.dispersion`), and, under ``histograms``, every HdrHistogram encoded so that
results of several processes merge exactly (:func:`merge`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from lanes import _core
from lanes.errors import BAD_ARGUMENT, LanesError

PERCENTILE_KEYS = ("mean", "p50", "p75", "p90", "p99", "p999", "max")
"""Keys of ``latency_ms`` and ``service_time_ms``."""
ERROR_CLASSES = ("connect", "read", "write", "status", "timeout")
"""Keys of ``errors``."""
MIN_DISPERSION_BINS = 10
"""Fewest bins :meth:`Result.dispersion` computes an index from."""


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

    def sends_binned(
        self, bin_ms: int = 10, start_s: float | None = None, end_s: float | None = None
    ) -> list[int]:
        """Requests actually sent (by send time, not intended time) per bin of ``bin_ms``.

        From ``sends_10ms``: ``bin_ms`` must be a positive multiple of its 10 ms bins, which are
        summed in groups. The bins are laid from ``start_s`` (seconds from the run's start; by
        default the series' own start), moved up to the next 10 ms boundary, and only whole bins
        ending by ``end_s`` count (by default the end of the last 10 ms bin with a send; bins
        past it sent nothing). Empty when the result has no series (results from before it).
        """
        series = self.data.get("sends_10ms") or {}
        step_ms = int(series.get("bin_ms", 10))
        if bin_ms <= 0 or bin_ms % step_ms:
            raise LanesError(
                BAD_ARGUMENT, f"bin_ms must be a positive multiple of {step_ms}, not {bin_ms}"
            )
        counts: list[int] = list(series.get("counts", []))
        origin_s = int(series.get("start_ns", 0)) / 1e9
        step_s = step_ms / 1e3
        first = 0 if start_s is None else max(0, math.ceil((start_s - origin_s) / step_s - 1e-9))
        end = len(counts)
        if end_s is not None:
            end = math.floor((end_s - origin_s) / step_s + 1e-9)
        group = bin_ms // step_ms
        padded = counts + [0] * max(0, end - len(counts))
        return [sum(padded[i : i + group]) for i in range(first, end - group + 1, group) if i >= 0]

    def dispersion(
        self, bin_ms: int = 10, start_s: float | None = None, end_s: float | None = None
    ) -> float | None:
        """Index of dispersion of the sends: variance / mean of the requests actually sent per
        bin of ``bin_ms`` over ``[start_s, end_s)`` (bins as :meth:`sends_binned` lays them;
        population variance).

        The rule: Poisson arrivals give about 1 at any bin width; constant spacing (a clock)
        about 0, as every bin holds the same count; synchronised waves — clients or tickers
        sending in phase, a sender that stalls and then sends what fell due at once — give far
        more than 1. ``None`` when there are fewer than 10 bins or none has a send.
        """
        bins = self.sends_binned(bin_ms, start_s, end_s)
        if len(bins) < MIN_DISPERSION_BINS:
            return None
        mean = sum(bins) / len(bins)
        if mean == 0:
            return None
        variance = sum((b - mean) ** 2 for b in bins) / len(bins)
        return variance / mean

    def percentile_distribution(self, which: Literal["latency", "service_time"] = "latency") -> str:
        """HdrHistogram's percentile-distribution text (values in ms), for its plotter."""
        return _core.load_percentiles(json.dumps(self.data), which)


def merge(results: Iterable[Result]) -> Result:
    """One result from runs made side by side: histograms and counts add exactly."""
    texts = [json.dumps(r.data) for r in results]
    return Result.from_json(_core.load_merge(texts))
