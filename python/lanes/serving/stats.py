"""Per-model statistics in Triton's shape (``GET /v2/models/{m}/stats``).

Counters only grow. Durations are nanoseconds, summed, with counts, as in Triton's
``inference_stats`` (``success``, ``fail``, ``queue``, ``compute_input``, ``compute_infer``,
``compute_output``) and ``batch_stats`` (per batch size: count and summed infer time). The split:
*queue* is the time from enqueue to the batch's start on a device, *compute_infer* the device
time of the batch, *compute_input*/*compute_output* the pre/post-processing time on the CPU pool.
lanes adds counts by outcome (``rejected`` 429, ``expired`` 504, ``cancelled`` gone clients).
``outcomes`` (not in the JSON; Prometheus' ``lanes_requests_total``) counts every request that
named the model once, in exactly one of :data:`OUTCOMES`.

A :class:`ModelStats` may feed Prometheus (lanes.serving.metrics): a duration's ``observe`` gets
every added duration in seconds (``success`` → end-to-end, ``queue``, ``compute_input`` →
pre-processing, ``compute_output`` → post-processing), and the ``sink`` gets outcomes and
executed batches.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

OUTCOMES = (
    "success",
    "rejected_queue_full",
    "deadline_exceeded",
    "cancelled",
    "bad_request",
    "model_error",
    "unavailable",
)
"""Where a request that names a served model ends: 200 · 429 · 504 · the client went away ·
400/413 · 500 · 503 (not ready or draining)."""


def outcome_of(status: int) -> str:
    """The outcome of a request answered with HTTP ``status``."""
    if status < 400:
        return "success"
    if status == 429:
        return "rejected_queue_full"
    if status == 504:
        return "deadline_exceeded"
    if status == 503:
        return "unavailable"
    return "model_error" if status >= 500 else "bad_request"


class Sink(Protocol):
    """Where outcomes and executed batches go besides these counters (Prometheus)."""

    def outcome(self, outcome: str) -> None: ...

    def batch(self, rows: int, infer_ns: int) -> None: ...


@dataclass
class Duration:
    count: int = 0
    ns: int = 0
    observe: Callable[[float], None] | None = field(default=None, repr=False, compare=False)

    def add(self, ns: int, count: int = 1) -> None:
        self.count += count
        self.ns += max(0, ns)
        if self.observe is not None:
            self.observe(max(0, ns) / 1e9)

    def json(self) -> dict[str, int]:
        return {"count": self.count, "ns": self.ns}


@dataclass
class ModelStats:
    name: str
    version: str
    inference_count: int = 0
    execution_count: int = 0
    last_inference_ms: int = 0
    success: Duration = field(default_factory=Duration)
    fail: Duration = field(default_factory=Duration)
    queue: Duration = field(default_factory=Duration)
    compute_input: Duration = field(default_factory=Duration)
    compute_infer: Duration = field(default_factory=Duration)
    compute_output: Duration = field(default_factory=Duration)
    batches: dict[int, Duration] = field(default_factory=dict)
    rejected: int = 0
    expired: int = 0
    cancelled: int = 0
    outcomes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    sink: Sink | None = field(default=None, repr=False, compare=False)

    def outcome(self, outcome: str) -> None:
        """A request that named this model ended as ``outcome`` (one of :data:`OUTCOMES`)."""
        self.outcomes[outcome] += 1
        if self.sink is not None:
            self.sink.outcome(outcome)

    def batch(self, rows: int, requests: int, infer_ns: int) -> None:
        """A batch of ``rows`` rows from ``requests`` requests ran for ``infer_ns``."""
        self.execution_count += 1
        self.inference_count += rows
        self.batches.setdefault(rows, Duration()).add(infer_ns)
        self.last_inference_ms = int(time.time() * 1000)
        if self.sink is not None:
            self.sink.batch(rows, infer_ns)

    def json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "last_inference": self.last_inference_ms,
            "inference_count": self.inference_count,
            "execution_count": self.execution_count,
            "inference_stats": {
                "success": self.success.json(),
                "fail": self.fail.json(),
                "queue": self.queue.json(),
                "compute_input": self.compute_input.json(),
                "compute_infer": self.compute_infer.json(),
                "compute_output": self.compute_output.json(),
                "cache_hit": Duration().json(),
                "cache_miss": Duration().json(),
            },
            "batch_stats": [
                {
                    "batch_size": size,
                    "compute_input": Duration().json(),
                    "compute_infer": d.json(),
                    "compute_output": Duration().json(),
                }
                for size, d in sorted(self.batches.items())
            ],
            "lanes": {
                "rejected": self.rejected,
                "expired": self.expired,
                "cancelled": self.cancelled,
            },
        }
