"""Balancing by least outstanding estimated work: which member takes the next batch.

**The rule** (:func:`pick`): each member's *outstanding work* is the sum of the estimated costs
of the batches it has in flight from this client (each batch's estimate is taken when it is
sent and given back when it answers). A batch of ``rows`` rows goes to the up member with the
smallest ``outstanding + cost(rows)`` — its estimated finish — so a slower member (a larger
cost) takes less, and a busy one waits its turn. Ties go to the member with fewer batches in
flight, then to the one picked longest ago. Round-robin is what this replaces: it sends a
slow member as much as a fast one and ignores what is already queued.

**The estimate** (:class:`CostModel`) of a batch on one member, first that applies:

1. the server's own cost estimates, when it publishes them (``lanes serve``: the scheduler's
   current estimate per batch size 1, 2, 4, …, ``max_batch_size``, as
   ``"cost_estimates": [{"batch_size", "ns"}]`` of ``GET /v2/models/{m}/stats``), interpolated
   linearly in batch size;
2. the client's own measurements on that member: an EWMA of the answer latency per batch size
   (queueing on the server included, so a loaded member looks dearer), interpolated likewise;
3. the same as seen on the other members (a new member is assumed average);
4. one unit per batch (then the rule is "fewest batches in flight").

Estimates are seconds; only their ratios between members matter.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol


def interpolate(points: dict[int, float], rows: int) -> float | None:
    """The value at ``rows`` of the piecewise-linear curve through ``points`` (batch size →
    seconds), extended proportionally to rows beyond its ends; None without points."""
    if not points:
        return None
    if rows in points:
        return points[rows]
    sizes = sorted(points)
    i = bisect.bisect_left(sizes, rows)
    if i == 0:
        return points[sizes[0]] * rows / sizes[0]
    if i == len(sizes):
        return points[sizes[-1]] * rows / sizes[-1]
    lo, hi = sizes[i - 1], sizes[i]
    return points[lo] + (points[hi] - points[lo]) * (rows - lo) / (hi - lo)


@dataclass
class CostModel:
    """One member's cost estimates for one model (seconds per batch, by batch size)."""

    server: dict[int, float] = field(default_factory=dict)
    measured: dict[int, float] = field(default_factory=dict)

    def own(self, rows: int) -> float | None:
        """The server's estimate, else the client's measured one; None when neither exists."""
        value = interpolate(self.server, rows)
        return value if value is not None else interpolate(self.measured, rows)

    def observe(self, rows: int, seconds: float, alpha: float) -> None:
        """Fold one measured latency into the EWMA of its batch size."""
        old = self.measured.get(rows)
        self.measured[rows] = seconds if old is None else old + alpha * (seconds - old)


class Candidate(Protocol):
    """What :func:`pick` reads of a member."""

    outstanding_s: float
    inflight: int
    last_pick: int

    def cost_model(self, model: str) -> CostModel: ...


def estimate(member: Candidate, others: Sequence[Candidate], model: str, rows: int) -> float:
    """The estimated cost of a batch of ``rows`` on ``member`` (module docs, steps 1-4)."""
    own = member.cost_model(model).own(rows)
    if own is not None:
        return own
    seen = [v for m in others if (v := m.cost_model(model).own(rows)) is not None]
    return sum(seen) / len(seen) if seen else 1.0


def pick(candidates: Sequence[Candidate], model: str, rows: int) -> tuple[int, float] | None:
    """The index of the member that takes the batch and the batch's estimated cost there, by
    the module's rule; None when there is no candidate."""
    best: tuple[float, int, int] | None = None
    chosen: tuple[int, float] | None = None
    for i, m in enumerate(candidates):
        cost = estimate(m, candidates, model, rows)
        key = (m.outstanding_s + cost, m.inflight, m.last_pick)
        if best is None or key < best:
            best, chosen = key, (i, cost)
    return chosen
