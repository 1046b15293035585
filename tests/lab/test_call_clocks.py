"""lanes.lab.call_clocks: a run's device calls split by their thread's clocks into running,
waiting for a core and stopped — its rule on hand-made calls, and for real: a lab run on a
single-threaded ONNX Runtime executor whose server is stopped with SIGSTOP for 30 ms every
100 ms (the kernel then neither runs its threads nor counts them waiting for a core, as when a
hypervisor takes the vCPU away), carried into the run file, the summary, the report and the
terminal."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
import pytest
from tests.lab.test_host_noise import ONE_LEVEL

from lanes.lab import aggregate, call_clocks, report, runner
from lanes.lab.experiment import parse_experiment


def trace(*calls: tuple[str, float, float, float | None]) -> dict[str, Any]:
    """A timeline with devices ``cpu:0`` (tid 0) and ``cuda:0`` (tid 1) and one slice per
    ``(device, measured_ms, cpu_ms, run_delay_ms)``."""
    events: list[dict[str, Any]] = [
        {"name": "thread_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "cpu:0"}},
        {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "cuda:0"}},
    ]
    for i, (device, wall, cpu, delay) in enumerate(calls):
        args: dict[str, Any] = {"model": "m", "measured_ms": wall, "cpu_ms": cpu}
        if delay is not None:
            args["run_delay_ms"] = delay
        tid = 0 if device == "cpu:0" else 1
        events.append(
            {"name": "m", "ph": "X", "ts": i * 1e3, "dur": wall * 1e3, "pid": 1, "tid": tid,
             "args": args}
        )  # fmt: skip
    return {"traceEvents": events}


def test_only_cpu_devices_calls_with_both_clocks_count() -> None:
    got = call_clocks.calls(
        trace(("cpu:0", 2.0, 1.5, 0.25), ("cuda:0", 5.0, 0.1, 0.0), ("cpu:0", 3.0, 3.0, None))
    )
    assert got == [(2.0, 1.5, 0.25)]
    assert call_clocks.summary(trace(("cuda:0", 5.0, 0.1, 0.0))) is None
    assert call_clocks.summary({}) is None


def test_the_rule_on_hand_made_calls() -> None:
    # 98 calls of 1 ms CPU and 0.02 ms of rest (under the stop threshold), one waited 4 ms for
    # a core, one was stopped 10 ms
    rows = [(1.02, 1.0, 0.0)] * 98 + [(5.0, 1.0, 4.0), (11.0, 1.0, 0.0)]
    got = call_clocks.summarise(rows)
    assert got is not None
    wall = 98 * 1.02 + 5.0 + 11.0
    assert got["calls"] == 100 and got["wall_s"] == round(wall / 1e3, 4)
    assert got["shares"] == {
        "cpu": round(100 / wall, 4),
        "run_delay": round(4 / wall, 4),
        "rest": round((98 * 0.02 + 10) / wall, 4),
    }
    stops = got["stops"]
    assert stops["count"] == 1 and stops["max_ms"] == 10.0
    assert stops["ms"] == {"p50": 10.0, "p90": 10.0, "p99": 10.0}
    # one stop over the calls' exposure (CPU plus rest: 100 + 98 * 0.02 + 10 ms)
    assert stops["per_s"] == round(1 / ((100 + 98 * 0.02 + 10) / 1e3), 3)
    # the slowest 1 % is the stopped call
    assert got["tail"] == {"calls": 1, "wall_p50_ms": 11.0, "rest": round(10 / 11, 4),
                           "run_delay": 0.0}  # fmt: skip
    assert call_clocks.stopped_tail(got) == round(10 / 11, 4)
    # a rest below zero (clock reads' jitter) counts as none
    quiet = call_clocks.summarise([(1.0, 0.8, 0.3)])
    assert quiet is not None and quiet["shares"]["rest"] == 0.0 and quiet["stops"]["ms"] is None
    assert call_clocks.stopped_tail(quiet) is None
    assert call_clocks.stopped_tail(None) is None and call_clocks.stopped_tail({"tail": 3}) is None


CPU_LEVEL = (
    ONE_LEVEL.replace('"--devices", "sim:2"', '"--devices", "cpu:1", "--cpu-threads", "1"')
    .replace("levels = [50]", "levels = [600]")
    .replace("measure_s = 2", "measure_s = 3")
)
"""test_host_noise's one level, on one single-threaded ONNX Runtime executor at 600 req/s for
3 s. A stop shows in a call only when it falls while one runs: at 200 req/s for 2 s the executor
ran calls a tenth of the window, so the test's 15 or so stops met none in about one run of
five; here it runs them about a third of a longer window (some 25 stops, 8 expected to meet a
call)."""


@contextmanager
def stopping(every_s: float, for_s: float) -> Iterator[list[int]]:
    """Sends SIGSTOP then SIGCONT (``for_s`` later) every ``every_s`` to each ``lanes serve``
    process this test started; yields the pids it stopped."""
    done = threading.Event()
    stopped: list[int] = []

    def servers() -> list[psutil.Process]:
        found = []
        for child in psutil.Process().children(recursive=True):
            try:
                if "serve" in child.cmdline():
                    found.append(child)
            except psutil.Error:
                continue
        return found

    def loop() -> None:
        while not done.wait(every_s):
            for proc in servers():
                try:
                    os.kill(proc.pid, signal.SIGSTOP)
                    time.sleep(for_s)
                    os.kill(proc.pid, signal.SIGCONT)
                    stopped.append(proc.pid)
                except ProcessLookupError:
                    continue

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield stopped
    finally:
        done.set()
        thread.join()


def test_a_lab_run_whose_server_is_stopped_is_named_stopped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exp = parse_experiment(CPU_LEVEL)
    out = tmp_path / "results"
    with stopping(every_s=0.1, for_s=0.03) as stopped:  # 30 ms of every 130
        runner.run_experiment(exp, out, CPU_LEVEL)
    assert stopped, "the server was never stopped"
    run = json.loads((out / "runs" / "fifo" / "L0-r1.json").read_text())
    calls = run["calls"]
    assert calls["calls"] > 100, calls
    # the stops the calls met are the test's 30 ms, and they make the slowest calls' time
    assert calls["stops"]["count"] >= 1 and 20 <= calls["stops"]["max_ms"] <= 30 + 20, calls
    assert calls["tail"]["rest"] >= call_clocks.STOPPED_TAIL, calls
    summary = aggregate.aggregate(out)
    (row,) = summary["stopped"]
    assert row["id"] == "fifo/L0-r1" and row["stopped_tail"] == round(calls["tail"]["rest"], 3)
    page = report.build_report(out).html.read_text()
    assert "Runs stopped by the hypervisor" in page and "fifo/L0-r1: " in page
    assert "% of the slowest calls' time, p99" in page
    from lanes.cli.bench_run import print_diagnosis

    capsys.readouterr()
    print_diagnosis(out / "summary.json")
    assert "stopped by the hypervisor" in capsys.readouterr().out
    # the same run without the stops in its calls is not named
    calls["tail"]["rest"] = 0.0
    (out / "runs" / "fifo" / "L0-r1.json").write_text(json.dumps(run))
    summary = aggregate.aggregate(out)
    assert "stopped" not in summary and report.stopped_line(summary) is None
