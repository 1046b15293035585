"""``bench/calibrate/timelines.py``: a run's runtime calls per model, their CPU and their time
off a core, from slices that carry ``cpu_ms``."""

from __future__ import annotations

import importlib
import types
from pathlib import Path
from typing import Any

import pytest

CALIBRATE = Path(__file__).resolve().parents[2] / "bench" / "calibrate"


@pytest.fixture
def timelines(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    monkeypatch.syspath_prepend(str(CALIBRATE))
    return importlib.import_module("timelines")


def batch(model: str, ts: float, measured: float, cpu: float | None) -> dict[str, Any]:
    args: dict[str, Any] = {"model": model, "batch_size": 1, "measured_ms": measured}
    if cpu is not None:
        args["cpu_ms"] = cpu
    return {"ph": "X", "ts": ts, "dur": measured * 1e3 + 50, "args": args}


def test_each_models_calls_give_their_time_off_a_core_per_ms_of_cpu(
    timelines: types.ModuleType,
) -> None:
    trace = {
        "traceEvents": [
            batch("cnn", 0, 2.0, 2.0),
            batch("cnn", 10_000, 3.0, 2.0),
            batch("rnn", 20_000, 12.0, 8.0),
            batch("rnn", 40_000, 10.0, 8.0),
            # a clock read a hair apart: never a negative time off a core
            batch("rnn", 60_000, 7.999, 8.0),
        ]
    }
    calls = timelines.summarise(trace)["calls"]
    assert calls["cnn"] == {
        "calls": 2,
        "measured_ms": 2.5,
        "cpu_ms": 2.0,
        "off_ms": 0.5,
        "off_p99_ms": 0.99,
        "off_per_cpu": 0.25,
    }
    rnn = calls["rnn"]
    assert rnn["calls"] == 3 and rnn["off_ms"] == 2.0 and rnn["off_per_cpu"] == 0.25
    assert rnn["cpu_ms"] == 8.0


def test_without_every_calls_cpu_there_is_no_calls_block(timelines: types.ModuleType) -> None:
    trace = {"traceEvents": [batch("cnn", 0, 2.0, 2.0), batch("cnn", 10_000, 3.0, None)]}
    out = timelines.summarise(trace)
    assert "calls" not in out
    assert out["models"]["cnn"]["1"]["batches"] == 2


def test_the_calls_preempted_and_each_cells_cpu(timelines: types.ModuleType) -> None:
    trace = {
        "traceEvents": [
            batch("cnn", 0, 2.0, 2.0),
            # within the bound: a clock read, not a preemption
            batch("cnn", 10_000, 2.04, 2.0),
            batch("cnn", 20_000, 3.0, 2.0),
            batch("rnn", 30_000, 12.0, 8.0),
            batch("rnn", 50_000, 8.5, 8.0),
        ]
    }
    out = timelines.summarise(trace)
    pre = out["preempted"]
    assert pre["calls"] == 5 and pre["cpu_ms"] == 22.0 and pre["preempted"] == 3
    q = dict((p, ms) for p, ms in pre["quantiles_ms"])
    assert q[0.0] == 0.5 and q[0.5] == 1.0 and q[1.0] == 4.0
    assert out["models"]["cnn"]["1"]["cpu_ms"] == 2.0
    assert out["models"]["rnn"]["1"]["cpu_ms"] == 8.0
    # the median and the mean of a cell's CPU
    assert out["models"]["cnn"]["1"]["cpu_mean_ms"] == 2.0
    trace["traceEvents"].append(batch("rnn", 70_000, 11.0, 11.0))
    rnn = timelines.summarise(trace)["models"]["rnn"]["1"]
    assert rnn["cpu_ms"] == 8.0 and rnn["cpu_mean_ms"] == 9.0


def test_a_cell_without_every_calls_cpu_has_none(timelines: types.ModuleType) -> None:
    trace = {"traceEvents": [batch("cnn", 0, 2.0, 2.0), batch("cnn", 10_000, 3.0, None)]}
    out = timelines.summarise(trace)
    assert "cpu_ms" not in out["models"]["cnn"]["1"] and "preempted" not in out


def test_a_calls_run_delay_is_its_time_off_a_core_and_a_stop_is_not(
    timelines: types.ModuleType,
) -> None:
    """Slices that carry ``run_delay_ms`` (round 37) count it alone as the call's time off a
    core: the rest of its wall time beside both clocks is the hypervisor's stop, not a
    preemption."""
    waited = batch("cnn", 0, 5.0, 2.0)
    waited["args"]["run_delay_ms"] = 3.0
    stopped = batch("cnn", 10_000, 12.0, 2.0)
    stopped["args"]["run_delay_ms"] = 0.0  # 10 ms stopped: off no core of this guest
    out = timelines.summarise({"traceEvents": [waited, stopped]})
    assert out["calls"]["cnn"]["off_ms"] == 1.5 and out["calls"]["cnn"]["off_per_cpu"] == 0.75
    pre = out["preempted"]
    assert pre["preempted"] == 1 and "quantiles_ms" not in pre  # fewer than two waits
    # without the run delay the same calls read as two preemptions, the stop among them
    for ev in (waited, stopped):
        del ev["args"]["run_delay_ms"]
    pre = timelines.summarise({"traceEvents": [waited, stopped]})["preempted"]
    assert pre["preempted"] == 2 and pre["quantiles_ms"][-1] == [1.0, 10.0]
