"""``bench/calibrate/compare.py``'s prediction of the goodput, on the real simulator and the
committed scenario: the lab's rule, the requests within the SLO per second of the sending window
(the thirty-third round), so past the knee the SLO attainment times the offered rate."""

from __future__ import annotations

import importlib
import statistics
import types
from pathlib import Path

import numpy as np
import pytest

from lanes import sim
from lanes.sim.scenario import Scenario

ROOT = Path(__file__).resolve().parents[2]
CALIBRATE = ROOT / "bench" / "calibrate"
SCENARIO = ROOT / "examples" / "scenarios" / "cpu-2core.toml"


@pytest.fixture
def compare(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """The script as a module."""
    monkeypatch.syspath_prepend(str(CALIBRATE))
    return importlib.import_module("compare")


def test_past_the_knee_the_goodput_counts_the_sending_window(compare):
    """Far past the knee, per second of a window that ran to the last completion the backlog's
    drain would dilute the goodput; per second of sending it is the attainment times the offer."""
    scenario = Scenario.load(SCENARIO)
    rate, seeds = 1400.0, 10
    pred = compare.predicted(scenario, ["fifo"], [rate], seeds, 0, window_s=5.0)[("fifo", rate)]
    n = round(rate * 5.0 / (1 - compare.WARM_SHARE))
    load = rate / compare.scenario_rate(scenario)
    points = sim.run(scenario, ["fifo"], [load], seeds=list(range(1, seeds + 1)), requests=n).points
    attained = statistics.mean(p["slo_attainment"] * p["offered_rps"] for p in points)
    to_last_completion = statistics.mean(
        p["slo_attainment"] * p["requests"] * p["throughput_rps"] / (p["requests"] - p["dropped"])
        for p in points
    )
    assert attained < 0.95 * rate  # past the knee
    assert pred["goodput"] == pytest.approx(attained, rel=0.03)
    assert to_last_completion < 0.97 * pred["goodput"]


def test_below_the_knee_the_goodput_is_the_offer(compare):
    scenario = Scenario.load(SCENARIO)
    pred = compare.predicted(scenario, ["sjf"], [300.0], 20, 0, window_s=5.0)[("sjf", 300.0)]
    assert pred["goodput"] == pytest.approx(300.0, rel=0.03)


def _kkt(rows, ys, x):
    """The residual's gradient ``A^T (A x - y)`` at ``x``: zero where ``x > 0``, at least zero
    where ``x = 0`` at the non-negative optimum (its optimality conditions)."""
    a, y = np.asarray(rows, dtype=float), np.asarray(ys, dtype=float)
    return a.T @ (a @ np.asarray(x) - y)


def test_rule_2_fit_recovers_positive_costs(compare):
    """Runs made by known non-negative costs give those costs back, as the plain fit does."""
    rows = [
        (3.0, 3.0 * r, 3.0 * r / b) for r, b in [(200, 1.1), (400, 1.4), (600, 2.0), (800, 3.1)]
    ]
    truth = (0.05, 0.3e-3, 0.4e-3)
    ys = [sum(c * t for c, t in zip(row, truth, strict=True)) for row in rows]
    x = compare.least_squares(rows, ys)
    assert x == pytest.approx(truth, rel=1e-6)


def test_rule_2_fit_never_gives_a_negative_cost(compare):
    """CPU falling with the load (grid 213's shape) fits a negative cost per request without the
    bound; with it every cost is at least zero and the fit is the constrained optimum (its
    gradient vanishes on the costs above zero and points outward on those at zero)."""
    rows = [
        (3.0, 3.0 * r, 3.0 * r / b) for r, b in [(200, 1.0), (400, 1.2), (600, 1.9), (800, 3.0)]
    ]
    ys = [0.9, 0.85, 0.95, 0.8]
    free = np.linalg.lstsq(np.asarray(rows), np.asarray(ys), rcond=None)[0]
    assert (free < 0).any(), "the data must need the bound for this test to test it"
    x = compare.least_squares(rows, ys)
    assert min(x) >= 0
    grad = _kkt(rows, ys, x)
    scale = float(np.abs(np.asarray(rows)).max() * max(abs(v) for v in ys))
    for xi, gi in zip(x, grad, strict=True):
        if xi > 0:
            assert abs(gi) <= 1e-9 * scale
        else:
            assert gi >= -1e-9 * scale
