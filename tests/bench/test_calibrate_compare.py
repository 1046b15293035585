"""``bench/calibrate/compare.py``'s prediction: the simulated goodput measured as the lab measures
it (the thirty-third round), on the real simulator and the committed scenario."""

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


def test_the_goodput_is_the_attainment_times_the_offer(compare):
    assert compare.lab_goodput({"slo_attainment": 0.7, "offered_rps": 800.0}) == pytest.approx(560)


def test_past_the_knee_the_goodput_counts_the_sending_window_only(compare):
    """Far past the knee the simulator's own goodput divides by a window stretched by the drain,
    so it falls short of the attainment times the offer; the prediction takes the lab's rule."""
    scenario = Scenario.load(SCENARIO)
    rate, seeds = 1400.0, 3
    pred = compare.predicted(scenario, ["fifo"], [rate], seeds, 0, window_s=5.0)[("fifo", rate)]
    n = round(rate * 5.0 / (1 - compare.WARM_SHARE))
    load = rate / compare.scenario_rate(scenario)
    points = sim.run(scenario, ["fifo"], [load], seeds=list(range(1, seeds + 1)), requests=n).points
    attained = statistics.mean(p["slo_attainment"] * p["offered_rps"] for p in points)
    own = statistics.mean(p["goodput_rps"] for p in points)
    assert pred["goodput"] == pytest.approx(attained)
    assert attained < 0.95 * rate  # past the knee
    assert own < 0.97 * attained  # the drain stretches the simulator's own window


def test_below_the_knee_the_goodput_is_the_offer(compare):
    scenario = Scenario.load(SCENARIO)
    pred = compare.predicted(scenario, ["sjf"], [300.0], 3, 0, window_s=5.0)[("sjf", 300.0)]
    assert pred["goodput"] == pytest.approx(300.0, rel=0.03)
