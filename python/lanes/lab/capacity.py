"""Capacity at SLO found by bisection between measured load levels.

A load level *meets the SLO* when at least :data:`SLO_TARGET` (99 %) of its requests were
answered within the SLO. The grid of an experiment (``workload.levels`` or ``concurrency``)
brackets the capacity; the search then narrows the bracket by measuring loads between.

The rule, a pure function of the measured points ``(load, met)`` (:func:`bracket`):

- ``low`` is the highest load measured to meet the SLO (None when none did);
- ``high`` is the lowest load above ``low`` measured to miss it (None when none did).

Every point above ``low`` missed, so no measured load lies strictly between the two.
:func:`next_probe` is the midpoint of ``(low, high)`` — for a concurrency, the whole number
below it — or None when there is nothing to bisect: no load met the SLO (the capacity is below
the grid; the search does not go under its lowest level), every load met it (the capacity is at
least the highest level; the search does not go above it), or the bracket holds no whole number
between its ends. A probe that meets the SLO becomes the new ``low``, one that misses the new
``high``, so each step halves the bracket and after ``k`` steps a grid gap ``g`` is resolved to
``g / 2**k``. The rule needs no monotone curve: on a noisy one (a low level missed, a higher one
met) ``low`` is still the highest load that met, as the grid's ``capacity_at_slo`` is. The search
is deterministic (the same points give the same probes) and bounded (at most ``steps`` probes).

The capacity is ``low``: a load measured to meet the SLO; the boundary lies in ``[low, high)``,
and ``high - low`` is the resolution.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

SLO_TARGET = 0.99
"""A level meets the SLO when at least this share of its requests does."""
MAX_STEPS = 8
"""The most bisection steps an experiment may ask for."""

Point = tuple[float, bool]
"""A measured load and whether it met the SLO."""


def meets(attainment: float | None) -> bool:
    """True when an SLO attainment is at least :data:`SLO_TARGET` (None never is)."""
    return attainment is not None and attainment >= SLO_TARGET - 1e-12


@dataclass(frozen=True)
class Bracket:
    """Where the capacity lies, from measured points (see the module doc)."""

    low: float | None
    """The highest load measured to meet the SLO; None when none did."""
    high: float | None
    """The lowest load above ``low`` measured to miss it; None when none did."""

    @property
    def resolution(self) -> float | None:
        """``high - low``; None when either end is unknown."""
        return None if self.low is None or self.high is None else self.high - self.low


def bracket(points: Iterable[Point]) -> Bracket:
    """The bracket of ``points`` (the module doc's rule)."""
    pts = list(points)
    met = [load for load, ok in pts if ok]
    low = max(met) if met else None
    missed = [load for load, ok in pts if not ok and (low is None or load > low)]
    return Bracket(low, min(missed) if missed else None)


def next_probe(points: Iterable[Point], *, integer: bool = False) -> float | None:
    """The next load to measure, or None when there is nothing to bisect."""
    b = bracket(points)
    if b.low is None or b.high is None:
        return None
    mid = (b.low + b.high) // 2 if integer else (b.low + b.high) / 2
    return float(mid) if b.low < mid < b.high else None


def search(
    points: Iterable[Point], measure: Callable[[float], bool], steps: int, *, integer: bool = False
) -> list[Point]:
    """Run at most ``steps`` probes after ``points``; return the probes measured, in order.

    ``measure(load)`` measures one load and says whether it met the SLO.
    """
    seen = list(points)
    probes: list[Point] = []
    for _ in range(steps):
        load = next_probe(seen, integer=integer)
        if load is None:
            break
        probe = (load, measure(load))
        probes.append(probe)
        seen.append(probe)
    return probes
