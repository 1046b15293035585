"""``bench/calibrate/same_hour.py``: the wake-ups and client part a scenario takes from a grid's
spans (the rest is compare.py's, tested with it)."""

from __future__ import annotations

import importlib
import types
from pathlib import Path
from typing import Any

import pytest

CALIBRATE = Path(__file__).resolve().parents[2] / "bench" / "calibrate"


@pytest.fixture
def sh(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """The script as a module (it imports compare.py and variants.py from beside itself)."""
    monkeypatch.syspath_prepend(str(CALIBRATE))
    return importlib.import_module("same_hour")


def waits(pre: float, post: float, parts: dict[str, list[float]]) -> dict[str, object]:
    return {
        "wake_pre": [[0.0, 0.0], [0.5, pre], [1.0, 2 * pre]],
        "wake_post": [[0.0, 0.0], [0.5, post], [1.0, 2 * post]],
        "client_part": parts,
    }


def test_the_lowest_level_of_every_variant(sh):
    table = {
        "fifo@100": waits(0.1, 0.2, {}),
        "sjf@100": waits(0.3, 0.4, {}),
        "fifo@200": waits(9.0, 9.0, {}),
    }
    entries = sh.lowest(table)
    assert len(entries) == 2
    # each quantile the mean over the variants of theirs
    assert sh.mean_wake(entries, "wake_pre") == ((0.0, 0.0), (0.5, 0.2), (1.0, 0.4))
    assert sh.mean_wake(entries, "wake_post") == ((0.0, 0.0), (0.5, 0.3), (1.0, 0.6))


def test_the_client_part_is_the_median_less_the_io_on_pre(sh):
    io = sh.IO_EXTRA
    entries = [
        waits(0, 0, {"a": [0.3, 1.0, 2.0], "b": [0.5, 1.2, 2.2]}),
        waits(0, 0, {"a": [0.4, 1.1, 2.1]}),
    ]
    q = sh.client_part(entries)
    # medians over variant x model: 0.4, 1.1, 2.1; less the I/O CPU pre already runs
    assert q[1] == (0.5, pytest.approx(0.4 - io))
    assert q[2] == (0.9, pytest.approx(1.1 - io))
    assert q[3] == (0.99, pytest.approx(2.1 - io))
    assert q[0] == (0.0, 0.0) and q[4] == (1.0, pytest.approx(1.5 * (2.1 - io)))


def test_a_client_part_below_the_io_is_floored_at_zero_and_stays_ordered(sh):
    q = sh.client_part([waits(0, 0, {"a": [0.1, 0.15, 0.9]})])
    assert q[1][1] == 0.0 and q[2][1] == 0.0
    assert [ms for _, ms in q] == sorted(ms for _, ms in q)


def test_the_default_is_simulated_as_the_demo_simulates_it(sh):
    from lanes.serving.default_policy import CPU_POLICY

    assert sh.AS_SIMULATED["default"] == (CPU_POLICY, 2)
    assert {v: sh.AS_SIMULATED[v] for v in ("fifo", "sjf", "independent")} == {
        "fifo": ("fifo", 1),
        "sjf": ("sjf", 1),
        "independent": ("independent", 1),
    }


def test_a_grid_read_with_the_default_in_it_is_refused(sh, tmp_path, capsys):
    import json

    for variant in ("fifo", "default"):
        (tmp_path / "runs" / variant).mkdir(parents=True)
        (tmp_path / "runs" / variant / "L0-r1.json").write_text(json.dumps({"variant": variant}))
    with pytest.raises(SystemExit) as info:
        sh.main([str(tmp_path), str(tmp_path / "waits.json")])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "holds default" in err and "--against" in err


def sched_run(rate: float, waits_n: int, perf_s: float, cpu_cores: float) -> dict[str, object]:
    """A sched.py run with what rule 6 reads."""
    return {
        "rate": rate,
        "perf_s": perf_s,
        "perf": {"lanes-device": {"preempted_wait_ms": {"n": waits_n, "p50": 0.05, "max": 1.0}}},
        "schedstat": {"server": {"lanes-device": {"cpu_cores": cpu_cores}}},
    }


def test_preemptions_by_offered_rate_are_each_rates_median(sh, tmp_path):
    import json

    compare = importlib.import_module("compare")
    # n waits in 2 s of perf, the device threads at 0.5 cores (500 ms of CPU a second):
    # n / 2 / 500 per ms of CPU
    runs = [sched_run(200, 1400, 2.0, 0.5), sched_run(600, 2400, 2.0, 0.5)]
    (tmp_path / "fifo.json").write_text(json.dumps({"runs": runs}))
    more = [sched_run(200, 1000, 2.0, 0.5), sched_run(200, 1600, 2.0, 0.5)]
    (tmp_path / "sjf.json").write_text(json.dumps({"runs": more}))
    # at 200 req/s the median of 1.4, 1.0 and 1.6
    assert compare.preempt_rates(tmp_path) == ((200.0, 1.4), (600.0, 2.4))
    # the one median over every run, as before
    assert compare.preemption(tmp_path)[0] == 1.5


def test_preempt_by_level_needs_sched(sh, tmp_path, capsys):
    import json

    (tmp_path / "runs" / "fifo").mkdir(parents=True)
    (tmp_path / "runs" / "fifo" / "L0-r1.json").write_text(json.dumps({"variant": "fifo"}))
    with pytest.raises(SystemExit) as info:
        sh.main([str(tmp_path), str(tmp_path / "waits.json"), "--preempt-by-level"])
    assert info.value.code == 2
    assert "needs sched/" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("threads", "flags", "says"),
    [
        (False, ["--on-core"], "needs threads/"),
        (True, ["--on-core", "--wall-time"], "not --wall-time"),
        (True, ["--on-core", "--run-queues"], "counts the calls' run delay"),
        (True, ["--on-core", "--call-stretch", "lossy"], "--call-stretch weighted only"),
    ],
)
def test_on_core_refuses_what_it_cannot_read_or_combine(sh, tmp_path, capsys, threads, flags, says):
    import json

    (tmp_path / "runs" / "fifo").mkdir(parents=True)
    (tmp_path / "runs" / "fifo" / "L0-r1.json").write_text(json.dumps({"variant": "fifo"}))
    if threads:
        (tmp_path / "threads").mkdir()
    with pytest.raises(SystemExit) as info:
        sh.main([str(tmp_path), str(tmp_path / "waits.json"), *flags])
    assert info.value.code == 2
    assert says in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--lag", "0"], "above 0"),
        (["--lag", "-1"], "above 0"),
        (["--lag", "1.5", "--run-queues"], "not with --run-queues"),
        (["--lag", "1.5", "--call-stretch", "weighted"], "not with --run-queues, --call-stretch"),
        (["--among-calls"], "--among-calls needs --lag"),
        (["--calls"], "timelines.json"),
        (["--preempt-from-calls", "--no-preempt"], "not with --no-preempt"),
        (["--call-cpu", "--wall-time"], "not with --wall-time"),
        (["--absorbed", "--no-preempt"], "not with --no-preempt"),
    ],
)
def test_lag_refuses_what_it_cannot_combine(sh, tmp_path, capsys, flags, says):
    import json

    (tmp_path / "runs" / "fifo").mkdir(parents=True)
    (tmp_path / "runs" / "fifo" / "L0-r1.json").write_text(json.dumps({"variant": "fifo"}))
    with pytest.raises(SystemExit) as info:
        sh.main([str(tmp_path), str(tmp_path / "waits.json"), *flags])
    assert info.value.code == 2
    assert says in capsys.readouterr().err


def test_the_calls_table_sets_the_lab_against_the_simulator(sh, tmp_path):
    import json

    runs = [
        {
            "id": f"fifo/L0-r{i}",
            "variant": "fifo",
            "offered": {"rate_rps": 600.0},
            "server": {
                "host_cpu_idle": 0.1 * i,
                "window_s": 2.0,
                "device": {"cpu:0": {"busy_s": 1.0}, "cpu:1": {"busy_s": 0.6 * i}},
            },
        }
        for i in (1, 2)
    ]
    timelines = {
        "fifo/L0-r1": {"calls": {"a": {"off_per_cpu": 0.1}, "b": {"off_per_cpu": None}}},
        "fifo/L0-r2": {"calls": {"a": {"off_per_cpu": 0.3}, "b": {"off_per_cpu": 0.2}}},
    }
    (tmp_path / "timelines.json").write_text(json.dumps(timelines))
    lab = sh.lab_call_waits(tmp_path, runs)
    # devices busy: (1.0 + 0.6) / 2 / 2 = 0.4 and (1.0 + 1.2) / 2 / 2 = 0.55
    want = {"a": 0.2, "b": 0.1, "cpu_idle": 0.15, "gpu_busy": 0.475}
    assert lab == {("fifo", 600.0): pytest.approx(want)}
    pred = {
        ("fifo", 600.0): {"p50": 1.0, "wait_per_ms:a": 0.25, "cpu_idle": 0.05, "gpu_busy": 0.5},
        ("fifo", 800.0): {},
    }
    text = sh.calls_table(lab, pred)
    assert "| fifo | 600 | 0.20 / 0.25 |  | 0.15 / 0.05 | 0.48 / 0.50 |" in text
    assert "800" not in text


def test_a_simulated_call_wait_is_its_wall_over_its_cost(sh):
    compare = importlib.import_module("compare")
    assert compare.call_wait({"call_ms": 1.5, "call_cost_ms": 1.0}) == pytest.approx(0.5)
    assert compare.call_wait({"call_ms": 0.0, "call_cost_ms": 0.0}) == 0.0


def lab_run(variant: str, rate: float, repeat: int) -> dict[str, object]:
    return {
        "id": f"{variant}/L{int(rate) // 200 - 1}-r{repeat}",
        "variant": variant,
        "offered": {"rate_rps": rate},
    }


def test_preemptions_read_off_the_calls_are_the_lowest_levels_engine_runs(sh):
    compare = importlib.import_module("compare")
    waits = [[0.0, 0.06], [0.5, 0.2], [1.0, 3.0]]
    timelines = {
        # the lowest level's fifo and sjf runs: 3 + 1 preempted calls in 40 ms of CPU
        "fifo/L0-r1": {"preempted": {"calls": 9, "cpu_ms": 30.0, "preempted": 3,
                                     "quantiles_ms": waits}},
        "sjf/L0-r1": {"preempted": {"calls": 4, "cpu_ms": 10.0, "preempted": 1}},
        "sjf/L0-r2": {"preempted": {"calls": 8, "cpu_ms": 20.0, "preempted": 2,
                                    "quantiles_ms": [[0.0, 0.1], [0.5, 0.4], [1.0, 1.0]]}},
        # neither independent nor a higher level counts
        "independent/L0-r1": {"preempted": {"calls": 9, "cpu_ms": 1.0, "preempted": 9,
                                            "quantiles_ms": [[0.0, 9], [0.5, 9], [1.0, 9]]}},
        "fifo/L1-r1": {"preempted": {"calls": 9, "cpu_ms": 1.0, "preempted": 9,
                                     "quantiles_ms": [[0.0, 9], [0.5, 9], [1.0, 9]]}},
    }  # fmt: skip
    runs = [lab_run("fifo", 200, 1), lab_run("sjf", 200, 1), lab_run("sjf", 200, 2)]
    runs += [lab_run("independent", 200, 1), lab_run("fifo", 400, 1)]
    rate, points = compare.call_preemption(timelines, runs)
    assert rate == round(6 / 60, 4)
    # each level the median of the two runs with waits
    assert points == ((0.0, 0.08), (0.5, 0.3), (1.0, 2.0))
    with pytest.raises(SystemExit, match=r"re-run timelines\.py"):
        compare.call_preemption({"fifo/L0-r1": {"models": {}}}, runs[:1])


def test_the_calls_own_cpu_is_each_cells_cost(sh):
    from lanes.sim.scenario import Scenario

    compare = importlib.import_module("compare")
    base = Scenario.load(compare.DEFAULT_SCENARIO)
    name = base.services[0].name
    cell = {"batches": 20, "measured_ms": 2.0, "cpu_ms": 1.5}
    timelines = {
        f"{v}/L0-r{k}": {
            "hold_ms": 0.1,
            "models": {s.name: {"1": dict(cell)} for s in base.services},
        }
        for v in ("fifo", "sjf")
        for k in (1, 2)
    }
    by_cpu = {c.name: dict(c.points) for c in compare.in_situ(timelines, base, call_cpu=True)}
    by_share = {c.name: dict(c.points) for c in compare.in_situ(timelines, base, lambda r: 0.8)}
    assert by_cpu[name][1] == (1.5, True)
    assert by_share[name][1] == (1.6, True)
    del timelines["sjf/L0-r2"]["models"][name]["1"]["cpu_ms"]
    with pytest.raises(SystemExit, match="carry no cpu_ms"):
        compare.in_situ(timelines, base, call_cpu=True)


def test_with_cost_mean_a_point_is_its_calls_mean_over_the_runs(sh):
    from lanes.sim.scenario import Scenario

    compare = importlib.import_module("compare")
    base = Scenario.load(compare.DEFAULT_SCENARIO)
    name = base.services[0].name
    # three runs: medians 1.0, 1.0, 1.0 but means 1.2 (10 calls), 1.2 (10), 2.0 (30)
    cells = [(1.2, 10), (1.2, 10), (2.0, 30)]
    timelines = {
        f"fifo/L0-r{k}": {
            "hold_ms": 0.1,
            "models": {
                s.name: {"1": {"batches": n, "measured_ms": 2.0, "cpu_ms": 1.0, "cpu_mean_ms": m}}
                for s in base.services
            },
        }
        for k, (m, n) in enumerate(cells, start=1)
    }
    median = {c.name: dict(c.points) for c in compare.in_situ(timelines, base, call_cpu=True)}
    mean = {
        c.name: dict(c.points)
        for c in compare.in_situ(timelines, base, call_cpu=True, cost_mean=True)
    }
    assert median[name][1] == (1.0, True)
    # every call counts once: (1.2 x 20 + 2.0 x 30) / 50
    assert mean[name][1] == (pytest.approx(1.68), True)
    with pytest.raises(ValueError, match="call_cpu"):
        compare.in_situ(timelines, base, cost_mean=True)
    del timelines["fifo/L0-r2"]["models"][name]["1"]["cpu_mean_ms"]
    with pytest.raises(SystemExit, match="carry no cpu_mean_ms"):
        compare.in_situ(timelines, base, call_cpu=True, cost_mean=True)


def test_with_pooled_ratio_an_unread_point_takes_the_grids_own_ratio(sh):
    from lanes.sim.scenario import Scenario

    compare = importlib.import_module("compare")
    base = Scenario.load(compare.DEFAULT_SCENARIO)
    s = next(s for s in base.services if s.batching is not None)

    def grid(per_run: int) -> dict[str, Any]:
        # Four runs read at 1 and 2 (20 batches each); at 4 too few batches a run to be read
        # (per_run < MIN_BATCHES), at 3.6 ms of CPU against 2.0 at 2 in the same runs: 1.8x.
        def cells(name: str) -> dict[str, Any]:
            out = {
                "1": {"batches": 20, "measured_ms": 1.5, "cpu_ms": 1.0, "cpu_mean_ms": 1.0},
                "2": {"batches": 20, "measured_ms": 2.5, "cpu_ms": 2.0, "cpu_mean_ms": 2.0},
            }
            if name == s.name:
                out["4"] = {"batches": per_run, "measured_ms": 4, "cpu_ms": 3.6, "cpu_mean_ms": 3.6}
            return out

        return {
            f"{v}/L0-r{k}": {
                "hold_ms": 0.1,
                "models": {x.name: cells(x.name) for x in base.services},
            }
            for v in ("fifo", "sjf")
            for k in (1, 2)
        }

    def points(timelines: dict[str, Any], pooled: bool) -> dict[int, tuple[float, bool]]:
        got = compare.in_situ(timelines, base, call_cpu=True, pooled_ratio=pooled)
        return dict(next(c for c in got if c.name == s.name).points)

    def scenario_ratio(n: int, m: int) -> float:
        return compare.batch_cost(s, n) / compare.batch_cost(s, m)

    enough = grid(8)  # 32 batches of 4 over the runs: at least MIN_POOLED
    assert compare.pooled_ratio_of(enough, s.name, 4, 2) == pytest.approx(1.8)
    assert points(enough, True)[4] == (pytest.approx(3.6), False)
    # 8 has no batches: the scenario's ratio, from the point set at 4
    assert points(enough, True)[8][0] == pytest.approx(3.6 * scenario_ratio(8, 4))
    # without the option, or with too few batches, the scenario's ratio from the point read at 2
    assert points(enough, False)[4][0] == pytest.approx(2.0 * scenario_ratio(4, 2))
    few = grid(7)  # 28 batches
    assert compare.pooled_ratio_of(few, s.name, 4, 2) is None
    assert points(few, True) == points(few, False)
    with pytest.raises(ValueError, match="call_cpu"):
        compare.in_situ(enough, base, pooled_ratio=True)


def test_pooled_ratio_needs_call_cpu(sh, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        sh.main([str(tmp_path), str(tmp_path / "w.json"), "--pooled-ratio"])
    assert info.value.code == 2
    assert "--pooled-ratio reads the calls' own CPU" in capsys.readouterr().err


def test_cost_mean_needs_call_cpu(sh, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        sh.main([str(tmp_path), str(tmp_path / "w.json"), "--cost-mean"])
    assert info.value.code == 2
    assert "--cost-mean reads the calls' own CPU" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--preempt-by-level"], "--write writes one scenario"),
        (["--call-cpu", "--costs-by-level"], "--write writes one scenario"),
    ],
)
def test_write_refuses_a_scenario_per_level(sh, tmp_path, capsys, flags, says):
    out = tmp_path / "s.toml"
    with pytest.raises(SystemExit) as info:
        sh.main([str(tmp_path), str(tmp_path / "w.json"), "--write", str(out), *flags])
    assert info.value.code == 2
    assert says in capsys.readouterr().err
    assert not out.exists()


def test_write_refuses_a_missing_folder(sh, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        sh.main([str(tmp_path), str(tmp_path / "w.json"), "--write", str(tmp_path / "no/s.toml")])
    assert info.value.code == 2
    assert "no such folder" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--host-speed-cpu", "2,x"], "level indices such as 2,3"),
        (["--host-speed-cpu", "2,3", "--host-speed"], "the host's speed is read one way"),
    ],
)
def test_host_speed_cpu_refuses_what_it_cannot_read(sh, tmp_path, capsys, flags, says):
    with pytest.raises(SystemExit) as info:
        sh.main([str(tmp_path), str(tmp_path / "w.json"), *flags])
    assert info.value.code == 2
    assert says in capsys.readouterr().err


def test_with_server_cpu_the_fits_own_constant_is_not_counted_twice(sh):
    """``--server-cpu`` puts its ``a`` on ``busy_cores`` in place of the fit's own constant
    (round 37: both went on, 0.254 + 0.098 cores beside the measured 0.113)."""
    import compare

    from lanes.sim.scenario import Scenario

    f = compare.Fit(busy_cores=0.113, server_cores=0.254, request_ms=-0.2, batch_ms=0.0,
                    batch_size=4.0)  # fmt: skip
    base = Scenario.load(compare.DEFAULT_SCENARIO)
    read = sh.with_server_cpu(compare.calibrated(base, sh.host_fit(f, True)), 0.098, 0.33)
    assert read.host.busy_cores == pytest.approx(0.113 + 0.098)
    # without --server-cpu the fit's constant is the server's, as before
    alone = compare.calibrated(base, sh.host_fit(f, False))
    assert alone.host.busy_cores == pytest.approx(0.113 + 0.254)
