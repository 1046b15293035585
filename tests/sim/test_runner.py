"""Sweeps: averaging seeds, the JSON document, and running the native simulator."""

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from lanes.errors import LanesError
from lanes.sim import Scenario, capacity, run, timeline

ROOT = Path(__file__).resolve().parents[2]


def test_rows_average_the_seeds(fake_results) -> None:
    results = fake_results(
        policies=("independent", "sjf"),
        loads=(0.5, 0.8),
        seeds=(1, 2),
        scale=lambda p, load, s: 100.0 * s,  # seed 1: scale 100, seed 2: scale 200
    )
    rows = results.rows()
    assert [(r.policy, r.load, r.seeds) for r in rows] == [
        ("independent", 0.5, 2),
        ("independent", 0.8, 2),
        ("sjf", 0.5, 2),
        ("sjf", 0.8, 2),
    ]
    row = rows[0]
    assert row.mean_ms == pytest.approx(150.0)  # mean of 1.0 * 100 and 1.0 * 200
    assert row.p50_ms == pytest.approx(120.0)
    assert row.p99_ms == pytest.approx(600.0)
    assert row.p999_ms == pytest.approx(900.0)
    assert row.throughput_rps == pytest.approx(50.0)
    assert row.slo_attainment == pytest.approx(0.995)
    assert row.gpu_busy == pytest.approx(0.5)
    assert row.cpu_idle == pytest.approx(0.6)
    # services in scenario order; the i-th has scale (i + 1) * seed scale
    assert row.service_p99_ms == {
        "cnn": pytest.approx(600.0),
        "rnn_zh": pytest.approx(1200.0),
        "rnn_en": pytest.approx(1800.0),
    }


def test_to_json_shape(fake_results) -> None:
    results = fake_results(capacity={"sjf": {"overall": 0.8, "every_service": 0.75}})
    doc = results.to_json("lanes sim ocr")
    assert doc["scenario"] == "ocr"
    assert doc["command"] == "lanes sim ocr"
    assert len(doc["points"]) == 2 * 2 * 2
    assert doc["capacity"] == {"sjf": {"overall": 0.8, "every_service": 0.75}}
    json.dumps(doc, allow_nan=False)


def test_to_json_has_no_capacity_unless_measured(fake_results) -> None:
    assert "capacity" not in fake_results().to_json("lanes sim")


def test_to_json_turns_non_finite_numbers_into_null(fake_results) -> None:
    results = fake_results()
    results.points[0]["latency_ms"]["max"] = math.inf
    results.points[0]["services"]["cnn"]["p99"] = math.nan
    doc = results.to_json("lanes sim")
    assert doc["points"][0]["latency_ms"]["max"] is None
    assert doc["points"][0]["services"]["cnn"]["p99"] is None
    json.dumps(doc, allow_nan=False)


BAD_ARGS = [
    ({"loads": []}, "loads: empty"),
    ({"loads": [0.0]}, "loads: 0.0"),
    ({"loads": [math.nan]}, "loads: nan"),
    ({"seeds": []}, "seeds: empty"),
    ({"seeds": [-1]}, "seeds: -1"),
    ({"seeds": [2**64]}, "seeds: 18446744073709551616"),
    ({"requests": 0}, "requests: 0"),
    ({"threads": -1}, "threads: -1"),
]


@pytest.mark.parametrize(("kwargs", "needle"), BAD_ARGS, ids=[c[1] for c in BAD_ARGS])
def test_run_refuses_bad_arguments_before_simulating(kwargs, needle) -> None:
    args = {"policies": ["fifo"], "loads": [0.5], "seeds": [1], "requests": 100, **kwargs}
    with pytest.raises(LanesError) as info:
        run("ocr", **args)
    assert info.value.code == "bad_argument"
    assert info.value.message.startswith(needle)


# Below: the native simulator.


def test_run_returns_one_point_per_policy_load_seed_in_order(core) -> None:
    results = run("ocr", ["independent", "sjf"], [0.5, 0.8], seeds=[1, 2], requests=5000)
    assert [(p["policy"], p["load"], p["seed"]) for p in results.points] == [
        (policy, load, seed)
        for policy in ("independent", "sjf")
        for load in (0.5, 0.8)
        for seed in (1, 2)
    ]
    assert results.policies == ("independent", "sjf")
    assert results.version == core.version()
    assert len(results.rows()) == 4


def test_run_is_deterministic(core) -> None:
    def once() -> str:
        results = run(Scenario.load("ocr"), ["fifo", "sjf"], [0.7], seeds=[7], requests=5000)
        return json.dumps(results.to_json("x")["points"], sort_keys=True)

    assert once() == once()


def test_thread_count_does_not_change_results(core) -> None:
    def points(threads: int) -> tuple:
        return run("ocr", ["independent", "sjf"], [0.8], [1, 2], 5000, threads=threads).points

    assert points(1) == points(0)


def test_run_different_seeds_differ(core) -> None:
    results = run("ocr", ["fifo"], [0.7], seeds=[1, 2], requests=5000)
    a, b = results.points
    assert a["latency_ms"] != b["latency_ms"]


def test_run_unknown_policy(core) -> None:
    with pytest.raises(LanesError) as info:
        run("ocr", ["nope"], [0.5], seeds=[1], requests=100)
    assert info.value.code == "unknown_policy"
    assert "nope" in info.value.message


def test_timeline_is_the_runs_point_with_every_batch(core) -> None:
    point, spans = timeline("ocr", "fifo", 0.7, seed=3, requests=5000)
    (same,) = run("ocr", ["fifo"], [0.7], seeds=[3], requests=5000).points
    assert point == same
    assert spans and set(spans[0]) == {
        "service",
        "device",
        "size",
        "oldest_ms",
        "start_ms",
        "called_ms",
        "end_ms",
        "cost_ms",
        "measured",
    }
    for name, service in point["services"].items():
        # every batch of the run is in the timeline; the per-size counts are the measured ones
        ours = [s for s in spans if s["service"] == name]
        measured = sum(1 for s in ours if s["measured"])
        counted = sum(t["batches"] for t in service["batches"].values())
        assert 0 <= counted - measured <= 4
        assert all(s["oldest_ms"] <= s["start_ms"] <= s["called_ms"] < s["end_ms"] for s in ours)
    with pytest.raises(LanesError) as info:
        timeline("ocr", "fifo", -1.0)
    assert info.value.code == "bad_argument"
    with pytest.raises(LanesError) as info:
        timeline("ocr", "lifo", 0.5)
    assert info.value.code == "unknown_policy"


def test_capacity(core) -> None:
    caps = capacity("ocr", ["fifo"], seeds=[1], requests=5000)
    assert set(caps) == {"fifo"}
    assert set(caps["fifo"]) == {"overall", "every_service"}
    for value in caps["fifo"].values():
        assert isinstance(value, float)
        assert 0.0 <= value <= 10.0  # ocr batches: loads above 1 are searched


def test_call_preemptions_reach_the_simulator(core) -> None:
    # Every runtime call preempted twice per ms of its cost on average, each wait 1 ms: at a
    # light load a request is slower by about twice its batch's cost.
    base = Scenario.load("ocr")
    host = replace(base.host, call_preempt_per_ms=2.0, call_preempt_ms=((0.0, 1.0), (1.0, 1.0)))
    plain, slow = (
        run(sc, ["fifo"], [0.05], seeds=[1], requests=4000).points[0]
        for sc in (base, replace(base, host=host))
    )
    added = slow["latency_ms"]["mean"] - plain["latency_ms"]["mean"]
    gpu = sum(s.share * s.gpu.mean_ms for s in base.services)
    assert added == pytest.approx(2.0 * gpu, rel=0.1)


def test_a_device_hold_reaches_the_simulator(core) -> None:
    # A constant hold of 5 ms on every batch: at a light load each request is about that much
    # slower; the cpu-2core scenario's measured table simulates too.
    base = Scenario.load("ocr")
    held = replace(base, host=replace(base.host, device_hold_ms=((0.0, 5.0), (1.0, 5.0))))
    plain, slow = (
        run(sc, ["fifo"], [0.05], seeds=[1], requests=2000).points[0] for sc in (base, held)
    )
    assert slow["latency_ms"]["p50"] - plain["latency_ms"]["p50"] == pytest.approx(5.0, abs=0.5)
    calibrated = Scenario.load(ROOT / "examples" / "scenarios" / "cpu-2core.toml")
    assert calibrated.host.device_hold_ms[-1][0] == 1.0
    assert run(calibrated, ["sjf"], [0.5], seeds=[1], requests=2000).points[0]["goodput_rps"] > 0


def test_a_busy_core_hold_reaches_the_simulator(core) -> None:
    # cpu-2core: two cores, two devices. Under `independent` its six runtimes outnumber the
    # cores, so a batch dispatched beside a running call may wait (here 20 ms) for its core;
    # under `fifo` each of the two device threads keeps a core of its own and nothing changes.
    cpu = Scenario.load(ROOT / "examples" / "scenarios" / "cpu-2core.toml")
    base = replace(cpu, host=replace(cpu.host, device_hold_busy_ms=()))
    slow = replace(cpu, host=replace(cpu.host, device_hold_busy_ms=((0.0, 20.0), (1.0, 20.0))))
    for policy, changes in (("independent", True), ("fifo", False)):
        plain, held = (
            run(sc, [policy], [0.3], seeds=[1], requests=4000).points[0] for sc in (base, slow)
        )
        assert (held["latency_ms"]["mean"] > plain["latency_ms"]["mean"] + 1.0) == changes, policy
        if not changes:
            assert held == plain
