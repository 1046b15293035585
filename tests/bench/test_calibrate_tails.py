"""``bench/calibrate/tails.py``: the slowest requests taken apart, the lab's and the simulator's.

A hand-made lane of batches checks the rebuild rule (each request's batcher wait, device-queue
wait, hold and call); the simulator's device timeline, taken apart by the same rule, gives every
service parts that add up, no request inside longer than the simulator measured it end to end,
and a device-queue wait that grows with the load."""

from __future__ import annotations

import importlib
import statistics
import types
from pathlib import Path

import pytest

from lanes.sim.scenario import Scenario

ROOT = Path(__file__).resolve().parents[2]
CALIBRATE = ROOT / "bench" / "calibrate"
SCENARIO = ROOT / "examples" / "scenarios" / "cpu-2core.toml"


@pytest.fixture
def tails(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    monkeypatch.syspath_prepend(str(CALIBRATE))
    return importlib.import_module("tails")


def test_the_rule_splits_a_request_into_its_waits(tails):
    B = tails.Batch
    # The lane's previous batch ends at 10; the next one's oldest request came at 4, and it was
    # dispatched at 12 (the device busy from 10 to 12), held 1 ms, called 5 ms.
    lane = [B("m", 1, 0.0, 1.0, 10.0, 8.0), B("m", 2, 4.0, 12.0, 18.0, 5.0)]
    first, second = tails.requests_inside(lane)
    # Request 0 arrived at 4: batcher 4-10, queue 10-12. Request 1 at 4 + 8 / 2 = 8: 8-10, 10-12.
    assert first == pytest.approx({"batcher": 6, "queue": 2, "hold": 1, "call": 5, "total": 14})
    assert second == pytest.approx({"batcher": 2, "queue": 2, "hold": 1, "call": 5, "total": 10})


def test_the_simulators_timeline_is_taken_apart_like_the_labs(tails):
    scenario = Scenario.load(SCENARIO)
    light = tails.sim_level(scenario, "sjf", 300.0, seeds=1, n=6000)
    heavy = tails.sim_level(scenario, "sjf", 700.0, seeds=1, n=6000)
    assert set(light.inside) == set(scenario.service_names)
    for lv in (light, heavy):
        for name, reqs in lv.inside.items():
            assert len(reqs) > 300, name
            for r in reqs:
                assert min(r[k] for k in tails.PARTS) >= 0
                assert r["total"] == pytest.approx(sum(r[k] for k in tails.PARTS))
            # Inside the server is part of the whole: its p50 is below the measured p50.
            inside_p50 = statistics.median(r["total"] for r in reqs)
            assert inside_p50 < float(lv.measured[name].split(" / ")[0]), name
        assert lv.count == "1 seeds x 6000 requests"

    def queue(lv: types.SimpleNamespace) -> float:
        return statistics.fmean(r["queue"] for reqs in lv.inside.values() for r in reqs)

    assert queue(heavy) > 2 * queue(light) > 0
