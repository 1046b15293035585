"""lanes.lab.speed_probe: the host speed probe's samples, its rule over a results folder, and a
real lab run that carries it into the run file, the summary, the report and the terminal."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from tests.lab.test_host_noise import ONE_LEVEL

from lanes.lab import aggregate, report, runner, speed_probe
from lanes.lab.experiment import parse_experiment


def test_the_probe_samples_the_window_and_stops_at_its_end() -> None:
    work = speed_probe.Work()
    start = time.time()
    got = speed_probe.run_until(start + 0.5, work, period_s=0.05)
    assert time.time() - start < 1.0  # it stops by itself at the window's end
    assert 6 <= got["samples"] <= 11, got["samples"]
    assert got["period_ms"] == 50.0
    times = [t for t, _ in got["series"]]
    assert times == sorted(times) and times[0] == 0.0 and times[-1] < 0.5
    # the work takes CPU time (a fraction of a ms on a 2-core EPYC), the median of the samples
    ms = sorted(v for _, v in got["series"])
    assert 0 < got["work_ms"] < 20 and got["work_ms"] == pytest.approx(ms[len(ms) // 2], rel=0.5)


def test_a_window_already_over_has_no_samples() -> None:
    got = speed_probe.run_until(time.time() - 1, speed_probe.Work())
    assert got == {"period_ms": 100.0, "samples": 0, "work_ms": None, "series": []}


def test_the_figure_is_the_works_cpu_time() -> None:
    """Twice the work reads about twice the time: the probe reads the work, on the thread's own
    CPU clock, not a constant. Each pair is timed back to back and the median of their ratios
    taken, so that the host's speed drifting between the two (other tests, a neighbour) does not
    enter the ratio."""
    work = speed_probe.Work()
    pairs = [(speed_probe.sample(work), _twice(work)) for _ in range(31)]
    alone = sorted(a for a, _ in pairs)[15]
    assert 0 < alone < 20
    ratio = sorted(t / a for a, t in pairs)[15]
    assert 1.5 < ratio < 3, (alone, ratio)


def _twice(work: speed_probe.Work) -> float:
    work()
    t0 = time.thread_time_ns()
    work()
    work()
    return (time.thread_time_ns() - t0) / 1e6


def _at(rate: float, ms: float | None) -> dict[str, object]:
    probe = None if ms is None else {"work_ms": ms}
    return {"offered": {"rate_rps": rate, "concurrency": None}, "speed_probe": probe}


@pytest.mark.parametrize(
    ("runs", "speeds"),
    [
        ([_at(1, 0.2), _at(1, 0.3), _at(1, 0.25), _at(1, None)], [0.8, 1.2, 1.0, None]),
        ([_at(1, 0.2), _at(1, 0.3)], [None, None]),  # fewer than 3 peers: no figure
        ([_at(1, 0.2), _at(1, 0.3), _at(1, None), _at(1, 0)], [None, None, None, None]),
        ([{}, {"speed_probe": None}, {"speed_probe": {"work_ms": True}}], [None, None, None]),
    ],
)
def test_a_runs_host_speed_is_its_probe_over_its_peers_median(runs, speeds) -> None:
    got = speed_probe.host_speeds(runs)
    assert got == [pytest.approx(s) if s is not None else None for s in speeds]


def test_runs_are_set_against_their_peers_at_the_same_load() -> None:
    """Each run against its peers at the same load: the light load's probe reads slower for all
    of its runs, and none of them is slow; a run alone at its load has no figure."""
    light = [_at(200, 0.30), _at(200, 0.31), _at(200, 0.29)]
    heavy = [_at(900, 0.24), _at(900, 0.25), _at(900, 0.24), _at(900, 0.32)]
    lone = [_at(500, 0.40)]
    got = speed_probe.host_speeds(light + heavy + lone)
    assert got[:3] == [pytest.approx(v / 0.30) for v in (0.30, 0.31, 0.29)]
    assert got[3:7] == [pytest.approx(v / 0.245) for v in (0.24, 0.25, 0.24, 0.32)]
    assert got[7] is None
    slow = [i for i, v in enumerate(got) if v is not None and v >= speed_probe.SLOW_HOST]
    assert slow == [6]


THREE_REPEATS = ONE_LEVEL.replace("repeats = 1", "repeats = 3")
"""test_host_noise's one level of a sim server, three times."""


@pytest.mark.alone
def test_a_lab_run_carries_its_probe_and_a_slow_one_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exp = parse_experiment(THREE_REPEATS)
    out = tmp_path / "results"
    runner.run_experiment(exp, out, THREE_REPEATS)
    probes = []
    for repeat in (1, 2, 3):
        run = json.loads((out / "runs" / "fifo" / f"L0-r{repeat}.json").read_text())
        probe = run["speed_probe"]
        # every 0.1 s over the 2 s window
        assert 15 <= probe["samples"] <= 21, probe["samples"]
        assert len(probe["series"]) == probe["samples"] and probe["work_ms"] > 0
        probes.append(probe["work_ms"])
    summary = aggregate.aggregate(out)
    assert summary["probe_work_ms"] == sorted(probes)[1]
    (level,) = summary["variants"]["fifo"]["levels"]
    assert level["probe_work_ms"] == pytest.approx(sum(probes) / 3)
    # the third repeat's host ran the work twice as slow as the slower of the other two: against
    # their median it is named, and not left out
    path = out / "runs" / "fifo" / "L0-r3.json"
    run = json.loads(path.read_text())
    run["speed_probe"]["work_ms"] = 2 * max(probes[:2])
    path.write_text(json.dumps(run))
    summary = aggregate.aggregate(out)
    (row,) = summary["slow_host"]
    assert row["id"] == "fifo/L0-r3" and row["host_speed"] == 2.0
    assert row["p99_ms"] == run["load"]["latency_ms"]["p99"]
    assert summary["variants"]["fifo"]["levels"][0]["repeats"] == 3
    page = report.build_report(out).html.read_text()
    assert "Runs on a slow host" in page and "fifo/L0-r3: 2.00x" in page
    from lanes.cli.bench_run import print_diagnosis

    capsys.readouterr()
    print_diagnosis(out / "summary.json")
    printed = capsys.readouterr().out
    assert "ran on a slow host" in printed and "fifo/L0-r3 (2.00x)" in printed
    # a quiet folder names none (the first two repeats and a third like them)
    run["speed_probe"]["work_ms"] = max(probes[:2])
    path.write_text(json.dumps(run))
    summary = aggregate.aggregate(out)
    assert "slow_host" not in summary and report.slow_host_line(summary) is None
