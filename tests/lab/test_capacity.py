"""The capacity search: brackets and bisection on synthetic attainment curves, no server."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lanes.lab import capacity
from lanes.lab.capacity import Bracket

GRID = (100.0, 200.0, 300.0, 400.0, 500.0)


def below(threshold: float) -> Callable[[float], bool]:
    """A monotone curve: every load up to ``threshold`` meets the SLO."""
    return lambda load: load <= threshold


def table(results: dict[float, bool]) -> Callable[[float], bool]:
    """A curve given point by point (noisy, non-monotone): a load not listed fails the test."""
    return lambda load: results[load]


@pytest.mark.parametrize(
    ("attainment", "met"),
    [(1.0, True), (0.99, True), (0.9899, False), (0.0, False), (None, False)],
)
def test_a_load_meets_the_slo_at_99_percent(attainment: float | None, met: bool) -> None:
    assert capacity.meets(attainment) is met


@pytest.mark.parametrize(
    ("points", "expected"),
    [
        ([(100.0, True), (200.0, True), (300.0, False)], Bracket(200.0, 300.0)),
        ([(100.0, True), (200.0, True)], Bracket(200.0, None)),  # every load met
        ([(100.0, False), (200.0, False)], Bracket(None, 100.0)),  # none met
        ([], Bracket(None, None)),
        # noisy: 200 missed but 300 met: low is the highest load that met, as on the grid
        ([(100.0, True), (200.0, False), (300.0, True), (400.0, False)], Bracket(300.0, 400.0)),
        # the order of the points does not matter
        ([(300.0, False), (100.0, True), (250.0, False)], Bracket(100.0, 250.0)),
    ],
)
def test_bracket(points: list[capacity.Point], expected: Bracket) -> None:
    assert capacity.bracket(points) == expected


@pytest.mark.parametrize(
    ("grid", "curve", "steps", "integer", "probes", "expected"),
    [
        # monotone: the boundary at 437 is bracketed by 400 | 500, then 450 x, 425 ok, 437.5 x
        (GRID, below(437.0), 3, False, [(450.0, False), (425.0, True), (437.5, False)],
         Bracket(425.0, 437.5)),
        # the bound: at most `steps` probes, however wide the bracket still is
        (GRID, below(437.0), 1, False, [(450.0, False)], Bracket(400.0, 450.0)),
        (GRID, below(437.0), 0, False, [], Bracket(400.0, 500.0)),
        # every grid load met: no probe above the grid; the capacity is at least its top
        (GRID, below(1e9), 3, False, [], Bracket(500.0, None)),
        # none met: no probe below the grid
        (GRID, below(50.0), 3, False, [], Bracket(None, 100.0)),
        # non-monotone grid: bisect above the highest load that met (300), below 400
        (GRID, table({100.0: True, 200.0: False, 300.0: True, 400.0: False, 500.0: False,
                      350.0: True, 375.0: False, 362.5: False}),
         3, False, [(350.0, True), (375.0, False), (362.5, False)], Bracket(350.0, 362.5)),
        # noisy: 300 missed, yet 400 and the probe 450 met; the miss below is left behind
        (GRID, table({100.0: True, 200.0: True, 300.0: False, 400.0: True, 500.0: False,
                      450.0: True, 475.0: False, 462.5: False}),
         3, False, [(450.0, True), (475.0, False), (462.5, False)], Bracket(450.0, 462.5)),
        # concurrency: whole numbers, and the search ends when no whole number lies between
        ((1.0, 4.0, 16.0), below(6.0), 8, True,
         [(10.0, False), (7.0, False), (5.0, True), (6.0, True)], Bracket(6.0, 7.0)),
    ],
)  # fmt: skip
def test_search(
    grid: tuple[float, ...],
    curve: Callable[[float], bool],
    steps: int,
    integer: bool,
    probes: list[capacity.Point],
    expected: Bracket,
) -> None:
    points = [(load, curve(load)) for load in grid]
    measured: list[float] = []

    def measure(load: float) -> bool:
        measured.append(load)
        return curve(load)

    got = capacity.search(points, measure, steps, integer=integer)
    assert got == probes
    assert measured == [load for load, _ in probes]  # each probe measured once, in order
    assert capacity.bracket(points + got) == expected


@pytest.mark.parametrize("steps", [0, 1, 2, 3, 4, 5])
def test_each_step_halves_the_grid_gap(steps: int) -> None:
    """On a monotone curve the resolution after k steps is the grid gap / 2**k."""
    points = [(load, load <= 437.0) for load in GRID]
    probes = capacity.search(points, below(437.0), steps)
    assert capacity.bracket(points + probes).resolution == pytest.approx(100.0 / 2**steps)


def test_the_search_is_deterministic() -> None:
    points = [(load, load <= 437.0) for load in GRID]
    runs = [capacity.search(points, below(437.0), 4) for _ in range(2)]
    assert runs[0] == runs[1]


def test_next_probe_is_the_midpoint_or_nothing() -> None:
    assert capacity.next_probe([(100.0, True), (200.0, False)]) == 150.0
    assert capacity.next_probe([(3.0, True), (5.0, False)], integer=True) == 4.0
    assert capacity.next_probe([(3.0, True), (4.0, False)], integer=True) is None
    assert capacity.next_probe([(100.0, True)]) is None
    assert capacity.next_probe([(100.0, False)]) is None
