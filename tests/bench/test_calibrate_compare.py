"""``bench/calibrate/compare.py``'s prediction of the goodput, on the real simulator and the
committed scenario: the lab's rule, the requests within the SLO per second of the sending window
(the thirty-third round), so past the knee the SLO attainment times the offered rate."""

from __future__ import annotations

import importlib
import statistics
import types
from pathlib import Path

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
