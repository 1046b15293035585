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


def _row(goodput: float, attainment: float) -> dict[str, float]:
    return {"goodput": goodput, "attainment": attainment}


def test_the_capacity_knee_stops_at_the_labs_capacity_at_slo(compare):
    """Up to the lab's capacity: every level up to the highest whose mean attainment met 99 %
    (a lower level that missed counts, as the lab's capacity rule reads a noisy grid), none
    above; the goodput rule also counts a level past it that still delivered 90 % of the offer."""
    meas = {
        ("fifo", 200.0): _row(200, 1.0),
        ("fifo", 400.0): _row(398, 0.985),
        ("fifo", 600.0): _row(600, 0.995),
        ("fifo", 800.0): _row(760, 0.95),
        ("fifo", 900.0): _row(700, 0.80),
    }
    assert [k[1] for k in compare.below_knee(meas, "fifo", "capacity")] == [200, 400, 600]
    assert [k[1] for k in compare.below_knee(meas, "fifo", "goodput")] == [200, 400, 600, 800]
    meas[("fifo", 200.0)]["attainment"] = float("nan")  # a run without its attainment never met
    meas[("fifo", 600.0)]["attainment"] = 0.98
    assert compare.below_knee(meas, "fifo", "capacity") == []
    with pytest.raises(ValueError, match="knee 'slo'"):
        compare.below_knee(meas, "fifo", "slo")


def test_the_summary_says_which_knee_it_counts_up_to(compare):
    meas = {}
    for rate, attained in ((200.0, 1.0), (400.0, 0.9)):
        row = {"repeats": 1, "attainment": attained}
        for name, v in (("p50", 3.0), ("p99", 20.0), ("goodput", rate)):
            row.update({name: v, name + "_lo": v, name + "_hi": v})
            row.update({name + "_ci_lo": v, name + "_ci_hi": v})
        meas[("sjf", rate)] = row
    pred = {k: {"p50": 3.0, "p99": 30.0, "goodput": k[1]} for k in meas}
    text = compare.summary(meas, pred, "capacity")
    assert text.startswith("up to the lab's capacity at SLO")
    assert "- sjf (200 req/s): p50 +0 to +0 % (1/1 in range, 1/1 within 15%" in text
    assert "- sjf (200, 400 req/s)" in compare.summary(meas, pred)


def test_measured_keeps_the_runs_mean_attainment(compare):
    runs = [
        {
            "variant": "fifo",
            "offered": {"rate_rps": 400.0},
            "load": {
                "latency_ms": {"p50": 3.0, "p99": p99},
                "goodput_rps": 400.0,
                "slo_attainment": a,
            },
        }
        for p99, a in ((20.0, 1.0), (30.0, 0.98))
    ]
    assert compare.measured(runs)[("fifo", 400.0)]["attainment"] == pytest.approx(0.99)
