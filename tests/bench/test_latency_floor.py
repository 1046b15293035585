"""latency_floor.py's "added latency": each repeat's figure less the bare model's of the same
repeat, on the clock asked for (intended send or actual send), never across repeats."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "serve" / "peers"))

import latency_floor


def bare(repeat: int, p50_us: float, p99_us: float) -> dict[str, Any]:
    return {
        "repeat": repeat,
        "target": "bare",
        "at_rate": {"wall_p50_us": p50_us, "wall_p99_us": p99_us},
    }


def timed(
    repeat: int, target: str, intended: tuple[float, float], sent: tuple[float, float]
) -> dict[str, Any]:
    return {
        "repeat": repeat,
        "target": target,
        "latency_ms": {"p50": intended[0], "p99": intended[1]},
        "service_time_ms": {"p50": sent[0], "p99": sent[1]},
    }


RUNS = [
    bare(0, 100.0, 200.0),
    timed(0, "lanes-infer", (0.45, 1.5), (0.30, 0.9)),
    timed(0, "nginx", (0.25, 0.4), (0.12, 0.3)),
    bare(1, 50.0, 80.0),
    timed(1, "lanes-infer", (0.35, 1.1), (0.25, 0.6)),
    # A repeat whose bare model was not timed (an interrupted run) is left out, not paired
    # with another repeat's baseline.
    timed(2, "lanes-infer", (9.0, 9.0), (9.0, 9.0)),
]


@pytest.mark.parametrize(
    ("target", "clock", "q", "expected"),
    [
        ("lanes-infer", "latency_ms", "p50", [350.0, 300.0]),
        ("lanes-infer", "service_time_ms", "p50", [200.0, 200.0]),
        ("lanes-infer", "latency_ms", "p99", [1300.0, 1020.0]),
        ("lanes-infer", "service_time_ms", "p99", [700.0, 520.0]),
        ("nginx", "service_time_ms", "p50", [20.0]),
        ("lanes-noinline", "latency_ms", "p50", []),
    ],
)
def test_added_pairs_each_repeat_with_its_own_bare_model(
    target: str, clock: str, q: str, expected: list[float]
) -> None:
    assert latency_floor.added(RUNS, target, clock, q) == pytest.approx(expected)


def test_spread_is_median_and_range() -> None:
    assert latency_floor.spread([300.0, 100.0, 250.0]) == "250 (100-300)"
