"""Scenario files: the built-in, the examples, defaults, and every way a file can be wrong."""

import dataclasses
import json
import math
import types
from pathlib import Path
from typing import Any

import pytest

from lanes.errors import LanesError
from lanes.sim import Bursty, Poisson, Scenario, Trace, builtin_scenarios, run, timeline

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "scenarios"

BASE = """\
name = "t"
slo_ms = 150

[host]
gpus = 2
cpu_cores = 8

[[service]]
name = "a"
share = 0.6
workers_per_gpu = 2
pre = { mean_ms = 2, cv = 0.3 }
gpu = { mean_ms = 5, cv = 0.3 }
post = { mean_ms = 1, cv = 0.3 }

[[service]]
name = "b"
share = 0.4
arrival = "poisson"
pre = { mean_ms = 3, cv = 0.3 }
gpu = { mean_ms = 25, cv = 0.5 }
post = { mean_ms = 2, cv = 0.3 }
"""

SERVICES = BASE[BASE.index("[[service]]") :]
A_GPU = "gpu = { mean_ms = 5, cv = 0.3 }"
B_GPU = "gpu = { mean_ms = 25, cv = 0.5 }"
B_ARRIVAL = 'arrival = "poisson"'


def write(tmp_path: Path, text: str, name: str = "t.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def edit(old: str, new: str) -> str:
    assert old in BASE, old
    return BASE.replace(old, new, 1)


def test_builtin_ocr_is_listed_and_normalises_to_the_core_dict() -> None:
    assert "ocr" in builtin_scenarios()

    def phase(mean: float, cv: float) -> dict[str, object]:
        return {"dist": "lognormal", "mean_ms": mean, "cv": cv}

    def service(name, share, workers, pre, gpu, gpu_cv, post, batch, curve):
        return {
            "name": name,
            "share": share,
            "workers_per_gpu": workers,
            "arrival": {"kind": "poisson"},
            "pre": phase(pre, 0.3),
            "gpu": phase(gpu, gpu_cv),
            "post": phase(post, 0.3),
            "slo_ms": 150.0,
            "deadline_ms": None,
            "batching": {
                "max_batch_size": batch,
                "batch_timeout_micros": 0,
                "num_batch_threads": None,
                "batch_ms": curve,
            },
        }

    core = Scenario.load("ocr").to_core()
    assert core == {
        "name": "ocr",
        "slo_ms": 150.0,
        "host": {
            "gpus": 2,
            "cpu_cores": 8,
            "gpu_capacity": 1,
            "semaphore": 1,
            "eta": [1.0],
            "shared_cores": False,
        },
        "services": [
            service("cnn", 0.60, 2, 2.0, 5.0, 0.3, 1.0, 16, [[4, 8.0], [16, 20.0]]),
            service("rnn_zh", 0.25, 1, 3.0, 25.0, 0.5, 2.0, 8, [[8, 90.0]]),
            service("rnn_en", 0.15, 1, 2.0, 12.0, 0.5, 1.0, 8, [[8, 45.0]]),
        ],
    }
    assert math.fsum(s["share"] for s in core["services"]) == pytest.approx(1.0, abs=1e-12)
    json.dumps(core, allow_nan=False)  # plain data only


def test_core_dict_types() -> None:
    core = Scenario.load("ocr").to_core()
    assert all(type(v) is int for k, v in core["host"].items() if k not in ("eta", "shared_cores"))
    assert type(core["host"]["shared_cores"]) is bool
    assert all(type(x) is float for x in core["host"]["eta"])
    for s in core["services"]:
        assert type(s["share"]) is float
        assert type(s["slo_ms"]) is float
        for phase in ("pre", "gpu", "post"):
            assert type(s[phase]["mean_ms"]) is float
            assert type(s[phase]["cv"]) is float


def test_the_example_copy_of_ocr_is_the_builtin() -> None:
    example = Scenario.load(EXAMPLES / "ocr.toml")
    assert example.to_core() == Scenario.load("ocr").to_core()


SHARED_DATA = REPO.parent / "shared" / "data"


def _example(path: Path) -> object:
    # ocr-azure.toml reads the real traces from the project's shared/ folder beside the clone.
    needs_shared = "shared/data" in path.read_text()
    return pytest.param(
        path,
        id=path.name,
        marks=pytest.mark.skipif(
            needs_shared and not SHARED_DATA.is_dir(),
            reason=f"{path.name} needs the shared folder at {SHARED_DATA}",
        ),
    )


@pytest.mark.parametrize("path", [_example(p) for p in sorted(EXAMPLES.glob("*.toml"))])
def test_every_example_loads(path: Path) -> None:
    scenario = Scenario.load(path)
    assert scenario.services
    json.dumps(scenario.to_core(), allow_nan=False)


def test_time_slicing_and_handoff_reach_the_core_only_when_set(tmp_path: Path) -> None:
    plain = Scenario.load(write(tmp_path, BASE)).to_core()["host"]
    assert "time_slicing" not in plain and "handoff_ms" not in plain and "slice_ms" not in plain
    text = edit(
        "cpu_cores = 8",
        'cpu_cores = 8\ntime_slicing = true\nhandoff_ms = 0.25\nhandoff_dist = "exponential"\n'
        "slice_ms = 1.5",
    )
    host = Scenario.load(write(tmp_path, text)).to_core()["host"]
    assert (host["time_slicing"], host["handoff_ms"], host["handoff_dist"], host["slice_ms"]) == (
        True,
        0.25,
        "exponential",
        1.5,
    )


def test_device_hold_reaches_the_core_only_when_set(tmp_path: Path) -> None:
    assert "device_hold_ms" not in Scenario.load(write(tmp_path, BASE)).to_core()["host"]
    text = edit("cpu_cores = 8", "cpu_cores = 8\ndevice_hold_ms = [[0, 0.01], [0.5, 0.08], [1, 4]]")
    host = Scenario.load(write(tmp_path, text)).to_core()["host"]
    assert host["device_hold_ms"] == [[0.0, 0.01], [0.5, 0.08], [1.0, 4.0]]


def test_call_preemptions_reach_the_core_only_when_set(tmp_path: Path) -> None:
    assert "call_preempt_per_ms" not in Scenario.load(write(tmp_path, BASE)).to_core()["host"]
    text = edit(
        "cpu_cores = 8",
        "cpu_cores = 8\ncall_preempt_per_ms = 1.5\ncall_preempt_ms = [[0, 0], [0.5, 0.06], [1, 4]]",
    )
    host = Scenario.load(write(tmp_path, text)).to_core()["host"]
    assert host["call_preempt_per_ms"] == 1.5
    assert host["call_preempt_ms"] == [[0.0, 0.0], [0.5, 0.06], [1.0, 4.0]]


def test_a_busy_core_hold_reaches_the_core_only_when_set(tmp_path: Path) -> None:
    assert "device_hold_busy_ms" not in Scenario.load(write(tmp_path, BASE)).to_core()["host"]
    text = edit(
        "cpu_cores = 8",
        "cpu_cores = 8\nshared_cores = true\ntime_slicing = true\n"
        "device_hold_busy_ms = [[0, 0.01], [0.5, 0.4], [1, 9]]",
    )
    host = Scenario.load(write(tmp_path, text)).to_core()["host"]
    assert host["device_hold_busy_ms"] == [[0.0, 0.01], [0.5, 0.4], [1.0, 9.0]]


def test_a_call_stretch_reaches_the_core_only_when_set(tmp_path: Path) -> None:
    assert "call_stretch" not in Scenario.load(write(tmp_path, BASE)).to_core()["host"]
    text = edit(
        "cpu_cores = 8",
        "cpu_cores = 8\nshared_cores = true\ntime_slicing = true\ncall_stretch = [1, 1.25, 1.2]",
    )
    sc = Scenario.load(write(tmp_path, text))
    assert sc.host.call_stretch == (1.0, 1.25, 1.2)
    assert sc.to_core()["host"]["call_stretch"] == [1.0, 1.25, 1.2]


@pytest.mark.parametrize("key", ["call_stretch_weighted", "call_stretch_capped"])
def test_a_call_stretch_rule_reaches_the_core_only_when_set(tmp_path: Path, key: str) -> None:
    stretch = "cpu_cores = 8\nshared_cores = true\ntime_slicing = true\ncall_stretch = [1, 1.25]"
    plain = Scenario.load(write(tmp_path, edit("cpu_cores = 8", stretch)))
    assert getattr(plain.host, key) is False
    assert key not in plain.to_core()["host"]
    sc = Scenario.load(write(tmp_path, edit("cpu_cores = 8", stretch + f"\n{key} = true")))
    assert getattr(sc.host, key) is True
    assert sc.to_core()["host"][key] is True


def test_a_varying_speed_reaches_the_core_only_when_set(tmp_path: Path) -> None:
    assert "speed_cv" not in Scenario.load(write(tmp_path, BASE)).to_core()["host"]
    text = edit(
        "cpu_cores = 8", "cpu_cores = 8\ntime_slicing = true\nspeed_cv = 0.07\nspeed_ms = 90"
    )
    sc = Scenario.load(write(tmp_path, text))
    assert (sc.host.speed_cv, sc.host.speed_ms) == (0.07, 90.0)
    host = sc.to_core()["host"]
    assert (host["speed_cv"], host["speed_ms"]) == (0.07, 90.0)


def test_a_speed_series_reaches_the_core_only_when_set(tmp_path: Path) -> None:
    assert "speed_series" not in Scenario.load(write(tmp_path, BASE)).to_core()["host"]
    text = edit(
        "cpu_cores = 8",
        "cpu_cores = 8\ntime_slicing = true\nspeed_series = [1, 1.25, 0.9]\nspeed_series_ms = 250",
    )
    sc = Scenario.load(write(tmp_path, text))
    assert (sc.host.speed_series, sc.host.speed_series_ms) == ((1.0, 1.25, 0.9), 250.0)
    host = sc.to_core()["host"]
    assert (host["speed_series"], host["speed_series_ms"]) == ([1.0, 1.25, 0.9], 250.0)


def test_a_runs_own_speed_and_a_neighbour_reach_the_core_only_when_set(tmp_path: Path) -> None:
    host = Scenario.load(write(tmp_path, BASE)).to_core()["host"]
    assert "speed_run_cv" not in host and "busy_run_cores" not in host
    text = edit(
        "cpu_cores = 8",
        "cpu_cores = 8\ntime_slicing = true\nbusy_cores = 0.5\nspeed_run_cv = 0.03\n"
        "busy_run_cores = [[0, 0], [0.9, 0.05], [1, 0.7]]",
    )
    sc = Scenario.load(write(tmp_path, text))
    assert sc.host.speed_run_cv == 0.03
    assert sc.host.busy_run_cores == ((0.0, 0.0), (0.9, 0.05), (1.0, 0.7))
    host = sc.to_core()["host"]
    assert host["speed_run_cv"] == 0.03
    assert host["busy_run_cores"] == [[0.0, 0.0], [0.9, 0.05], [1.0, 0.7]]


def test_stops_reach_the_core_only_when_set_and_the_simulator_takes_them(
    tmp_path: Path, core: types.ModuleType
) -> None:
    assert "stop_ms" not in Scenario.load(write(tmp_path, BASE)).to_core()["host"]
    text = edit(
        "cpu_cores = 8",
        "cpu_cores = 8\ntime_slicing = true\nstop_ms = [[0, 0.2], [0.9, 1.2], [1, 30]]\n"
        "stops_per_s = 2.5\nstop_run_per_s = [[0, 0], [0.9, 5], [1, 20]]",
    )
    sc = Scenario.load(write(tmp_path, text))
    assert sc.host.stop_ms == ((0.0, 0.2), (0.9, 1.2), (1.0, 30.0))
    assert (sc.host.stops_per_s, sc.host.stop_run_per_s[-1]) == (2.5, (1.0, 20.0))
    host = sc.to_core()["host"]
    assert host["stop_ms"] == [[0.0, 0.2], [0.9, 1.2], [1.0, 30.0]]
    assert (host["stops_per_s"], host["stop_run_per_s"][1]) == (2.5, [0.9, 5.0])
    # the native simulator accepts them (it refuses any key it does not know)
    assert core.simulate(sc.to_core(), [("fifo", 0.5, 1)], 2000)[0]["requests"] > 0


def test_the_deadline_rule_reaches_the_core_only_when_finish_and_changes_what_runs(
    tmp_path: Path, core: types.ModuleType
) -> None:
    base = Scenario.load(write(tmp_path, BASE))
    assert base.host.deadline_rule == "start"
    assert "deadline_rule" not in base.to_core()["host"]
    sc = Scenario.load(
        write(tmp_path, edit("cpu_cores = 8", 'cpu_cores = 8\ndeadline_rule = "finish"'))
    )
    assert sc.host.deadline_rule == "finish"
    assert sc.to_core()["host"]["deadline_rule"] == "finish"

    # Past the knee with a deadline of the SLO, the native simulator runs the rule: under
    # finish it drops at the cut what would end late, so it carries more within the SLO.
    def point(s: Scenario) -> dict[str, Any]:
        c = s.to_core()
        for service in c["services"]:
            service["deadline_ms"] = c["slo_ms"]
        result: dict[str, Any] = core.simulate(c, [("fifo", 3.0, 1)], 20_000)[0]
        return result

    start, finish = point(base), point(sc)
    assert finish["goodput_rps"] > 1.05 * start["goodput_rps"], (start, finish)


def test_spells_by_load_reach_the_core_only_when_set(tmp_path: Path) -> None:
    speed = "cpu_cores = 8\ntime_slicing = true\nspeed_cv = 0.05\nspeed_ms = 250"
    plain = Scenario.load(write(tmp_path, edit("cpu_cores = 8", speed)))
    assert plain.host.speed_cv_busy is None
    assert "speed_cv_busy" not in plain.to_core()["host"]
    for busy in (0.0, 0.18):
        text = edit("cpu_cores = 8", f"{speed}\nspeed_cv_busy = {busy}")
        sc = Scenario.load(write(tmp_path, text))
        assert sc.host.speed_cv_busy == busy
        assert sc.to_core()["host"]["speed_cv_busy"] == busy
        assert "speed_busy_exponent" not in sc.to_core()["host"]
    text = edit("cpu_cores = 8", f"{speed}\nspeed_cv_busy = 0.2\nspeed_busy_exponent = 4")
    sc = Scenario.load(write(tmp_path, text))
    assert sc.host.speed_busy_exponent == 4.0
    assert sc.to_core()["host"]["speed_busy_exponent"] == 4.0


def test_a_call_on_core_share_reaches_the_core_only_when_below_one(tmp_path: Path) -> None:
    shared = "cpu_cores = 8\nshared_cores = true\ntime_slicing = true"
    plain = Scenario.load(write(tmp_path, edit("cpu_cores = 8", shared + "\ncall_on_core = 1")))
    assert plain.host.call_on_core == 1.0
    assert "call_on_core" not in plain.to_core()["host"]
    sc = Scenario.load(write(tmp_path, edit("cpu_cores = 8", shared + "\ncall_on_core = 0.86")))
    assert sc.host.call_on_core == 0.86
    assert sc.to_core()["host"]["call_on_core"] == 0.86


def test_a_lag_reaches_the_core_only_when_set(tmp_path: Path) -> None:
    shared = "cpu_cores = 8\nshared_cores = true\ntime_slicing = true"
    plain = Scenario.load(write(tmp_path, edit("cpu_cores = 8", shared + "\nlag_ms = 0")))
    assert "lag_ms" not in plain.to_core()["host"]
    sc = Scenario.load(write(tmp_path, edit("cpu_cores = 8", shared + "\nlag_ms = 1.5")))
    assert sc.host.lag_ms == 1.5
    assert sc.to_core()["host"]["lag_ms"] == 1.5
    assert "lag_among_calls" not in sc.to_core()["host"]


def test_a_lag_among_calls_needs_a_lag_and_reaches_the_core_only_when_set(tmp_path: Path) -> None:
    shared = "cpu_cores = 8\nshared_cores = true\ntime_slicing = true"
    text = shared + "\nlag_ms = 1.5\nlag_among_calls = true"
    sc = Scenario.load(write(tmp_path, edit("cpu_cores = 8", text)))
    assert sc.host.lag_among_calls is True
    assert sc.to_core()["host"]["lag_among_calls"] is True
    for bad, needs in (("lag_among_calls = true", "lag_ms > 0"), ("lag_among_calls = 1", "true")):
        with pytest.raises(LanesError, match=rf"host\.lag_among_calls.*{needs}") as info:
            Scenario.load(write(tmp_path, edit("cpu_cores = 8", shared + "\n" + bad)))
        assert info.value.code == "scenario_invalid"


def test_absorbed_preemptions_need_preemptions_on_shared_cores(tmp_path: Path) -> None:
    shared = "cpu_cores = 8\nshared_cores = true\ntime_slicing = true"
    preempt = "\ncall_preempt_per_ms = 0.5\ncall_preempt_ms = [[0, 0.1], [1, 2]]"
    plain = Scenario.load(write(tmp_path, edit("cpu_cores = 8", shared + preempt)))
    assert "call_preempt_absorbed" not in plain.to_core()["host"]
    text = shared + preempt + "\ncall_preempt_absorbed = true"
    sc = Scenario.load(write(tmp_path, edit("cpu_cores = 8", text)))
    assert sc.host.call_preempt_absorbed is True
    assert sc.to_core()["host"]["call_preempt_absorbed"] is True
    for bad, needs in (
        (shared + "\ncall_preempt_absorbed = true", "call_preempt_per_ms > 0"),
        ("cpu_cores = 8" + preempt + "\ncall_preempt_absorbed = true", "shared_cores"),
        (shared + preempt + "\ncall_preempt_absorbed = 1", "true or false"),
    ):
        with pytest.raises(LanesError, match=rf"host\.call_preempt_absorbed.*{needs}") as info:
            Scenario.load(write(tmp_path, edit("cpu_cores = 8", bad)))
        assert info.value.code == "scenario_invalid"


def test_run_queues_reach_the_core_only_when_set(tmp_path: Path) -> None:
    assert "run_queues" not in Scenario.load(write(tmp_path, BASE)).to_core()["host"]
    text = edit("cpu_cores = 8", "cpu_cores = 8\ntime_slicing = true\nrun_queues = true")
    sc = Scenario.load(write(tmp_path, text))
    assert sc.host.run_queues is True
    assert sc.to_core()["host"]["run_queues"] is True


def test_wakes_and_the_client_reach_the_core_only_when_set(tmp_path: Path) -> None:
    plain = Scenario.load(write(tmp_path, BASE)).to_core()["host"]
    assert not {"pre_wake_ms", "post_wake_ms", "client_ms"} & set(plain)
    text = edit(
        "cpu_cores = 8",
        "cpu_cores = 8\npre_wake_ms = [[0, 0.02], [0.99, 1.2], [1, 4]]\n"
        "post_wake_ms = [[0, 0.01], [1, 3]]\nclient_ms = [[0, 0.1], [0.5, 0.36], [1, 3]]",
    )
    host = Scenario.load(write(tmp_path, text)).to_core()["host"]
    assert host["pre_wake_ms"] == [[0.0, 0.02], [0.99, 1.2], [1.0, 4.0]]
    assert host["post_wake_ms"] == [[0.0, 0.01], [1.0, 3.0]]
    assert host["client_ms"] == [[0.0, 0.1], [0.5, 0.36], [1.0, 3.0]]


def test_wake_spells_reach_the_core_only_when_set(tmp_path: Path) -> None:
    tables = (
        "cpu_cores = 8\npre_wake_ms = [[0, 0.02], [1, 0.2]]\npost_wake_ms = [[0, 0.01], [1, 0.1]]"
    )
    plain = Scenario.load(write(tmp_path, edit("cpu_cores = 8", tables))).to_core()["host"]
    assert "wake_spell_ms" not in plain and "wake_spell_share" not in plain
    text = edit("cpu_cores = 8", f"{tables}\nwake_spell_ms = 4\nwake_spell_share = 0.9")
    sc = Scenario.load(write(tmp_path, text))
    assert (sc.host.wake_spell_ms, sc.host.wake_spell_share) == (4.0, 0.9)
    host = sc.to_core()["host"]
    assert (host["wake_spell_ms"], host["wake_spell_share"]) == (4.0, 0.9)
    # the simulator takes it: a run with the spells differs from one without
    sim_plain = run(write(tmp_path, edit("cpu_cores = 8", tables)), ["fifo"], [0.6], [1], 5000)
    sim_spell = run(write(tmp_path, text), ["fifo"], [0.6], [1], 5000)
    assert sim_plain.points[0]["latency_ms"] != sim_spell.points[0]["latency_ms"]


def test_busy_wake_ups_reach_the_core_only_when_set(tmp_path: Path) -> None:
    plain = Scenario.load(write(tmp_path, BASE)).to_core()["host"]
    assert not {"pre_wake_busy_ms", "post_wake_busy_ms"} & set(plain)
    text = edit(
        "cpu_cores = 8",
        "cpu_cores = 8\nshared_cores = true\ntime_slicing = true\n"
        "pre_wake_ms = [[0, 0.02], [1, 0.2]]\npost_wake_ms = [[0, 0.01], [1, 0.1]]\n"
        "pre_wake_busy_ms = [[0, 0.02], [0.9, 0.9], [1, 6]]\n"
        "post_wake_busy_ms = [[0, 0.01], [1, 5]]",
    )
    sc = Scenario.load(write(tmp_path, text))
    assert sc.host.pre_wake_busy_ms == ((0.0, 0.02), (0.9, 0.9), (1.0, 6.0))
    host = sc.to_core()["host"]
    assert host["pre_wake_busy_ms"] == [[0.0, 0.02], [0.9, 0.9], [1.0, 6.0]]
    assert host["post_wake_busy_ms"] == [[0.0, 0.01], [1.0, 5.0]]


def test_the_gpu_queue_reaches_the_core_only_when_fifo(tmp_path: Path) -> None:
    plain = Scenario.load(write(tmp_path, BASE)).to_core()["host"]
    assert "gpu_queue" not in plain
    text = edit("cpu_cores = 8", 'cpu_cores = 8\ngpu_queue = "fifo"')
    assert Scenario.load(write(tmp_path, text)).to_core()["host"]["gpu_queue"] == "fifo"


def test_interpreter_and_busy_cores_reach_the_core_only_when_set(tmp_path: Path) -> None:
    plain = Scenario.load(write(tmp_path, BASE)).to_core()["host"]
    assert "busy_cores" not in plain and "interpreter" not in plain
    text = edit(
        "cpu_cores = 8", "cpu_cores = 8\nbusy_cores = 0.5\n[host.interpreter]\nbatch_ms = 1.5"
    )
    host = Scenario.load(write(tmp_path, text)).to_core()["host"]
    assert (host["busy_cores"], host["interpreter"]) == (
        0.5,
        {"batch_ms": 1.5, "handoff_ms": 0.0, "convoy_ms": 0.0},
    )
    empty = edit("cpu_cores = 8", "cpu_cores = 8\n[host.interpreter]")
    assert Scenario.load(write(tmp_path, empty)).to_core()["host"]["interpreter"] == {
        "batch_ms": 0.0,
        "handoff_ms": 0.0,
        "convoy_ms": 0.0,
    }


def test_trace_example_reads_its_trace() -> None:
    scenario = Scenario.load(EXAMPLES / "ocr-trace.toml")
    arrival = scenario.services[0].arrival
    assert isinstance(arrival, Trace)
    assert len(arrival.times) == 1000
    assert arrival.times[0] == 0.0
    assert list(arrival.times) == sorted(arrival.times)
    assert scenario.services[1].arrival == Bursty(2.0)
    assert scenario.to_core()["services"][0]["arrival"]["kind"] == "trace"


def test_defaults(tmp_path: Path) -> None:
    text = edit('name = "t"\n', "")
    scenario = Scenario.load(write(tmp_path, text, "my-host.toml"))
    assert scenario.name == "my-host"  # the file name
    assert scenario.description == ""
    host = scenario.host
    assert (host.gpu_capacity, host.semaphore, host.eta) == (1, 1, (1.0,))
    b = scenario.services[1]
    assert b.workers_per_gpu == 1
    assert scenario.services[0].arrival == Poisson()
    assert b.gpu.dist == "lognormal"
    assert b.slo_ms == 150.0
    assert b.deadline_ms is None


def test_all_optional_keys(tmp_path: Path) -> None:
    text = (
        edit("cpu_cores = 8", "cpu_cores = 8\ngpu_capacity = 2\nsemaphore = 3\neta = [1, 1.3, 1.5]")
        .replace("share = 0.4", "share = 0.4\nslo_ms = 400\ndeadline_ms = 800")
        .replace(A_GPU, 'gpu = { dist = "exponential", mean_ms = 5 }')
        .replace("pre = { mean_ms = 2, cv = 0.3 }", 'pre = { dist = "constant", mean_ms = 2 }')
        .replace("post = { mean_ms = 1, cv = 0.3 }", "post = { mean_ms = 0, cv = 0.3 }")
    )
    scenario = Scenario.load(write(tmp_path, text))
    assert scenario.host.to_core() == {
        "gpus": 2,
        "cpu_cores": 8,
        "gpu_capacity": 2,
        "semaphore": 3,
        "eta": [1.0, 1.3, 1.5],
        "shared_cores": False,
    }
    a, b = scenario.to_core()["services"]
    assert a["gpu"] == {"dist": "exponential", "mean_ms": 5.0, "cv": 1.0}
    assert a["pre"] == {"dist": "constant", "mean_ms": 2.0, "cv": 0.0}
    assert a["post"] == {"dist": "constant", "mean_ms": 0.0, "cv": 0.0}  # no post phase
    assert (a["slo_ms"], a["deadline_ms"]) == (150.0, None)
    assert (b["slo_ms"], b["deadline_ms"]) == (400.0, 800.0)


@pytest.mark.parametrize(
    "arrival",
    ['arrival = { kind = "poisson" }', 'arrival = "poisson"'],
)
def test_poisson_spellings(tmp_path: Path, arrival: str) -> None:
    scenario = Scenario.load(write(tmp_path, edit(B_ARRIVAL, arrival)))
    assert scenario.to_core()["services"][1]["arrival"] == {"kind": "poisson"}


def test_bursty_arrival(tmp_path: Path) -> None:
    text = edit(B_ARRIVAL, 'arrival = { kind = "bursty", cv = 3 }')
    core = Scenario.load(write(tmp_path, text)).to_core()
    assert core["services"][1]["arrival"] == {"kind": "bursty", "cv": 3.0}


def test_trace_path_is_relative_to_the_scenario_file(tmp_path: Path) -> None:
    (tmp_path / "sub" / "traces").mkdir(parents=True)
    (tmp_path / "sub" / "traces" / "t.txt").write_text("# seconds\n10.5\n10\n\n12\n")
    text = edit(B_ARRIVAL, 'arrival = { kind = "trace", path = "traces/t.txt" }')
    core = Scenario.load(write(tmp_path / "sub", text)).to_core()
    assert core["services"][1]["arrival"] == {"kind": "trace", "times": [0.0, 0.5, 2.0]}


def test_shares_within_tolerance_are_rescaled_to_sum_to_one(tmp_path: Path) -> None:
    text = edit("share = 0.4", "share = 0.4000005")
    shares = [s.share for s in Scenario.load(write(tmp_path, text)).services]
    assert math.fsum(shares) == pytest.approx(1.0, abs=1e-15)
    assert shares[0] == pytest.approx(0.6, rel=1e-6)


def test_scenario_is_frozen() -> None:
    scenario = Scenario.load("ocr")
    with pytest.raises(dataclasses.FrozenInstanceError):
        scenario.slo_ms = 1.0  # type: ignore[misc]


def test_load_accepts_a_path_object_and_a_string(tmp_path: Path) -> None:
    path = write(tmp_path, BASE)
    assert Scenario.load(path) == Scenario.load(str(path))


# (id, old text of BASE, new text, what the one-line message must contain)
MALFORMED = [
    (
        "unknown top key",
        'name = "t"',
        'name = "t"\ncolour = 1',
        ["colour = 1", "unknown key", "slo_ms, host, service"],
    ),
    (
        "unknown host key",
        "gpus = 2",
        "gpus = 2\ngpu = 1",
        ["host.gpu = 1", "unknown key", "gpus, cpu_cores"],
    ),
    (
        "unknown service key",
        "share = 0.4",
        "share = 0.4\nweight = 3",
        ["service[1].weight = 3", "unknown key", "workers_per_gpu"],
    ),
    (
        "unknown phase key",
        B_GPU,
        "gpu = { mean_ms = 25, cv = 0.5, p99 = 3 }",
        ["service[1].gpu.p99 = 3", "dist, mean_ms, cv"],
    ),
    ("plural services", "[[service]]", "[[services]]", ["services = ", "unknown key"]),
    (
        "gpus a string",
        "gpus = 2",
        'gpus = "two"',
        ['host.gpus = "two"', "must be an integer >= 1 and <= 64"],
    ),
    ("gpus a bool", "gpus = 2", "gpus = true", ["host.gpus = true", "integer"]),
    ("gpus a float", "gpus = 2", "gpus = 2.5", ["host.gpus = 2.5", "integer"]),
    ("gpus zero", "gpus = 2", "gpus = 0", ["host.gpus = 0", ">= 1"]),
    ("gpus too many", "gpus = 2", "gpus = 65", ["host.gpus = 65", "<= 64"]),
    ("cpu cores missing", "cpu_cores = 8\n", "", ["host.cpu_cores is missing", "integer"]),
    ("host missing", "[host]\ngpus = 2\ncpu_cores = 8\n", "", ["host is missing", "[host]"]),
    ("host not a table", "[host]\ngpus = 2\ncpu_cores = 8\n", "host = 2\n", ["host = 2", "[host]"]),
    ("eta not a list", "gpus = 2", "gpus = 2\neta = 1.0", ["host.eta = 1.0", "array of numbers"]),
    ("eta empty", "gpus = 2", "gpus = 2\neta = []", ["host.eta = []", "non-empty"]),
    ("eta zero", "gpus = 2", "gpus = 2\neta = [1.0, 0]", ["host.eta[1] = 0", "> 0"]),
    ("eta too high", "gpus = 2", "gpus = 2\neta = [1.0, 2.5]", ["host.eta[1] = 2.5", "<= 2"]),
    ("semaphore zero", "gpus = 2", "gpus = 2\nsemaphore = 0", ["host.semaphore = 0", ">= 1"]),
    ("slo missing", "slo_ms = 150\n", "", ["slo_ms is missing", "> 0"]),
    ("slo negative", "slo_ms = 150", "slo_ms = -5", ["slo_ms = -5", "must be a number > 0"]),
    ("slo nan", "slo_ms = 150", "slo_ms = nan", ["slo_ms = nan", "number"]),
    (
        "service slo zero",
        "share = 0.4",
        "share = 0.4\nslo_ms = 0",
        ["service[1].slo_ms = 0", "> 0"],
    ),
    (
        "deadline negative",
        "share = 0.4",
        "share = 0.4\ndeadline_ms = -1",
        ["service[1].deadline_ms = -1", "> 0"],
    ),
    (
        "negative cv",
        B_GPU,
        "gpu = { mean_ms = 25, cv = -0.5 }",
        ["service[1].gpu.cv = -0.5", "must be a number >= 0 and <= 10"],
    ),
    ("cv too big", B_GPU, "gpu = { mean_ms = 25, cv = 30 }", ["service[1].gpu.cv = 30", "<= 10"]),
    (
        "cv a string",
        B_GPU,
        'gpu = { mean_ms = 25, cv = "0.5" }',
        ['service[1].gpu.cv = "0.5"', "number"],
    ),
    ("cv missing", A_GPU, "gpu = { mean_ms = 5 }", ["service[0].gpu.cv is missing", ">= 0"]),
    (
        "gpu mean zero",
        A_GPU,
        "gpu = { mean_ms = 0, cv = 0.3 }",
        ["service[0].gpu.mean_ms = 0", "> 0"],
    ),
    (
        "pre mean negative",
        "pre = { mean_ms = 2, cv = 0.3 }",
        "pre = { mean_ms = -2, cv = 0.3 }",
        ["service[0].pre.mean_ms = -2", ">= 0"],
    ),
    ("gpu phase missing", A_GPU + "\n", "", ["service[0].gpu is missing", "mean_ms"]),
    ("phase a number", A_GPU, "gpu = 5", ["service[0].gpu = 5", "table"]),
    (
        "bad dist",
        A_GPU,
        'gpu = { dist = "normal", mean_ms = 5, cv = 0.3 }',
        ['service[0].gpu.dist = "normal"', '"lognormal", "exponential", "constant"'],
    ),
    (
        "exponential with cv",
        A_GPU,
        'gpu = { dist = "exponential", mean_ms = 5, cv = 0.5 }',
        ["service[0].gpu.cv = 0.5", "exponential"],
    ),
    (
        "constant with cv",
        A_GPU,
        'gpu = { dist = "constant", mean_ms = 5, cv = 0.5 }',
        ["service[0].gpu.cv = 0.5", "constant"],
    ),
    ("no services", SERVICES, "", ["service is missing", "[[service]]"]),
    (
        "service a single table",
        SERVICES,
        '[service]\nname = "a"',
        ['service = { name = "a" }', "[[service]]"],
    ),
    ("name missing", 'name = "b"\n', "", ["service[1].name is missing", "letters, digits"]),
    (
        "name with a space",
        'name = "b"',
        'name = "b c"',
        ['service[1].name = "b c"', "letters, digits"],
    ),
    (
        "duplicate name",
        'name = "b"',
        'name = "a"',
        ['service[1].name = "a"', "duplicate", "service[0]"],
    ),
    ("share missing", "share = 0.4\n", "", ["service[1].share is missing", "> 0"]),
    (
        "share negative",
        "share = 0.4",
        "share = -0.2",
        ["service[1].share = -0.2", "must be a number > 0 and <= 1"],
    ),
    ("share zero", "share = 0.4", "share = 0", ["service[1].share = 0", "> 0"]),
    ("share a percentage", "share = 0.4", "share = 40", ["service[1].share = 40", "<= 1"]),
    ("share a string", "share = 0.4", 'share = "40%"', ['service[1].share = "40%"', "number"]),
    (
        "shares sum low",
        "share = 0.4",
        "share = 0.3",
        ["service[*].share = 0.6 + 0.3 = 0.9", "sum to 1"],
    ),
    (
        "shares sum high",
        "share = 0.4",
        "share = 0.5",
        ["service[*].share = 0.6 + 0.5 = 1.1", "sum to 1"],
    ),
    (
        "workers zero",
        "workers_per_gpu = 2",
        "workers_per_gpu = 0",
        ["service[0].workers_per_gpu = 0", ">= 1"],
    ),
    (
        "bad arrival kind",
        B_ARRIVAL,
        'arrival = "uniform"',
        ['service[1].arrival = "uniform"', '"poisson"', "bursty", "trace"],
    ),
    (
        "bad arrival table kind",
        B_ARRIVAL,
        'arrival = { kind = "gamma" }',
        ['service[1].arrival.kind = "gamma"', '"poisson", "bursty", "trace"'],
    ),
    (
        "arrival kind missing",
        B_ARRIVAL,
        "arrival = { cv = 2 }",
        ["service[1].arrival.kind is missing", '"poisson", "bursty", "trace"'],
    ),
    ("arrival a number", B_ARRIVAL, "arrival = 3", ["service[1].arrival = 3", "poisson"]),
    (
        "bursty as a string",
        B_ARRIVAL,
        'arrival = "bursty"',
        [
            'service[1].arrival = "bursty"',
            'bursty needs a cv: arrival = { kind = "bursty", cv = 2.0 }',
        ],
    ),
    (
        "bursty without cv",
        B_ARRIVAL,
        'arrival = { kind = "bursty" }',
        ["service[1].arrival.cv is missing", "> 0 and <= 10"],
    ),
    (
        "bursty cv zero",
        B_ARRIVAL,
        'arrival = { kind = "bursty", cv = 0 }',
        ["service[1].arrival.cv = 0", "> 0 and <= 10"],
    ),
    (
        "poisson with cv",
        B_ARRIVAL,
        'arrival = { kind = "poisson", cv = 2 }',
        ["service[1].arrival.cv = 2", "unknown key"],
    ),
    (
        "trace without path",
        B_ARRIVAL,
        'arrival = { kind = "trace" }',
        ["service[1].arrival.path is missing"],
    ),
    (
        "trace file missing",
        B_ARRIVAL,
        'arrival = { kind = "trace", path = "nope.csv" }',
        ['service[1].arrival.path = "nope.csv"', "no such file", "relative to the scenario"],
    ),
    (
        "trace as a string",
        B_ARRIVAL,
        'arrival = "trace"',
        ['service[1].arrival = "trace"', "trace needs a file", "path = "],
    ),
    ("toml syntax error", "gpus = 2", "gpus = ", ["TOML syntax error", "line 5"]),
    ("toml duplicate key", "gpus = 2", "gpus = 2\ngpus = 3", ["TOML syntax error"]),
    (
        "unknown batching key",
        A_GPU,
        A_GPU + "\nbatching = { max_batch = 8 }",
        ["service[0].batching.max_batch = 8", "unknown key", "max_batch_size"],
    ),
    (
        "batching max_batch_size 0",
        A_GPU,
        A_GPU + "\nbatching = { max_batch_size = 0 }",
        ["service[0].batching.max_batch_size = 0", ">= 1 and <= 4096"],
    ),
    (
        "batch_ms point below batch of one",
        A_GPU,
        A_GPU + "\nbatching = { max_batch_size = 8, batch_ms = [[4, 3]] }",
        ["service[0].batching.batch_ms[0]", "not below the previous"],
    ),
    (
        "batch_ms n not ascending",
        A_GPU,
        A_GPU + "\nbatching = { max_batch_size = 8, batch_ms = [[4, 9], [4, 10]] }",
        ["service[0].batching.batch_ms[1]", "n > 1 ascending"],
    ),
    (
        "batching not a table",
        A_GPU,
        A_GPU + "\nbatching = 8",
        ["service[0].batching = 8", "must be a table"],
    ),
    (
        "shared_cores not a bool",
        "cpu_cores = 8",
        "cpu_cores = 8\nshared_cores = 1",
        ["host.shared_cores = 1", "true or false"],
    ),
    (
        "busy-cores-all",
        "cpu_cores = 8",
        "cpu_cores = 8\nbusy_cores = 8",
        ["host.busy_cores = 8", "below cpu_cores (8)"],
    ),
    (
        "busy-cores-negative",
        "cpu_cores = 8",
        "cpu_cores = 8\nbusy_cores = -0.1",
        ["host.busy_cores"],
    ),
    (
        "time_slicing not a bool",
        "cpu_cores = 8",
        "cpu_cores = 8\ntime_slicing = 1",
        ["host.time_slicing = 1", "true or false"],
    ),
    (
        "slice-without-time-slicing",
        "cpu_cores = 8",
        "cpu_cores = 8\nslice_ms = 1.5",
        ["host.slice_ms = 1.5", "without time_slicing"],
    ),
    (
        "slice-negative",
        "cpu_cores = 8",
        "cpu_cores = 8\ntime_slicing = true\nslice_ms = -1",
        ["host.slice_ms"],
    ),
    (
        "device-hold-not-from-0",
        "cpu_cores = 8",
        "cpu_cores = 8\ndevice_hold_ms = [[0.1, 0.01], [1, 4]]",
        ["host.device_hold_ms[0]", "p ascending from 0 to 1"],
    ),
    (
        "device-hold-not-to-1",
        "cpu_cores = 8",
        "cpu_cores = 8\ndevice_hold_ms = [[0, 0.01], [0.9, 4]]",
        ["host.device_hold_ms[1]"],
    ),
    (
        "device-hold-falling",
        "cpu_cores = 8",
        "cpu_cores = 8\ndevice_hold_ms = [[0, 0.2], [0.5, 0.1], [1, 4]]",
        ["host.device_hold_ms[1]", "not below the previous"],
    ),
    (
        "device-hold-one-point",
        "cpu_cores = 8",
        "cpu_cores = 8\ndevice_hold_ms = [[0, 0.2]]",
        ["host.device_hold_ms"],
    ),
    (
        "device-hold-not-pairs",
        "cpu_cores = 8",
        'cpu_cores = 8\ndevice_hold_ms = [[0, "a"], [1, 4]]',
        ["host.device_hold_ms[0]"],
    ),
    (
        "call-preempt-negative",
        "cpu_cores = 8",
        "cpu_cores = 8\ncall_preempt_per_ms = -1\ncall_preempt_ms = [[0, 0], [1, 1]]",
        ["host.call_preempt_per_ms"],
    ),
    (
        "call-preempt-without-waits",
        "cpu_cores = 8",
        "cpu_cores = 8\ncall_preempt_per_ms = 1",
        ["host.call_preempt_ms", "call_preempt_per_ms > 0"],
    ),
    (
        "call-preempt-falling",
        "cpu_cores = 8",
        "cpu_cores = 8\ncall_preempt_per_ms = 1\ncall_preempt_ms = [[0, 0.2], [0.5, 0.1], [1, 4]]",
        ["host.call_preempt_ms[1]", "not below the previous"],
    ),
    (
        "hold-busy-without-time-slicing",
        "cpu_cores = 8",
        "cpu_cores = 8\nshared_cores = true\ndevice_hold_busy_ms = [[0, 0.1], [1, 4]]",
        ["host.device_hold_busy_ms", "time_slicing"],
    ),
    (
        "hold-busy-falling",
        "cpu_cores = 8",
        "cpu_cores = 8\nshared_cores = true\ntime_slicing = true\n"
        "device_hold_busy_ms = [[0, 0.2], [0.5, 0.1], [1, 4]]",
        ["host.device_hold_busy_ms[1]", "not below the previous"],
    ),
    (
        "busy-wake-without-its-idle-table",
        "cpu_cores = 8",
        "cpu_cores = 8\nshared_cores = true\ntime_slicing = true\n"
        "post_wake_busy_ms = [[0, 0.1], [1, 4]]",
        ["host.post_wake_busy_ms", "post_wake_ms"],
    ),
    (
        "busy-wake-without-time-slicing",
        "cpu_cores = 8",
        "cpu_cores = 8\nshared_cores = true\npre_wake_ms = [[0, 0.02], [1, 0.2]]\n"
        "pre_wake_busy_ms = [[0, 0.1], [1, 4]]",
        ["host.pre_wake_busy_ms", "time_slicing"],
    ),
    (
        "call-stretch-without-time-slicing",
        "cpu_cores = 8",
        "cpu_cores = 8\nshared_cores = true\ncall_stretch = [1, 1.2]",
        ["host.call_stretch", "time_slicing", "processor sharing"],
    ),
    (
        "call-stretch-with-slices",
        "cpu_cores = 8",
        "cpu_cores = 8\nshared_cores = true\ntime_slicing = true\nslice_ms = 4\n"
        "call_stretch = [1, 1.2]",
        ["host.call_stretch", "slice_ms = 0"],
    ),
    (
        "call-stretch-below-one",
        "cpu_cores = 8",
        "cpu_cores = 8\nshared_cores = true\ntime_slicing = true\ncall_stretch = [1, 0.8]",
        ["host.call_stretch[1]", "1"],
    ),
    (
        "call-stretch-weighted-without-a-table",
        "cpu_cores = 8",
        "cpu_cores = 8\nshared_cores = true\ntime_slicing = true\ncall_stretch_weighted = true",
        ["host.call_stretch_weighted", "needs call_stretch"],
    ),
    (
        "call-stretch-weighted-not-a-bool",
        "cpu_cores = 8",
        "cpu_cores = 8\nshared_cores = true\ntime_slicing = true\ncall_stretch = [1, 1.2]\n"
        "call_stretch_weighted = 1",
        ["host.call_stretch_weighted", "true or false"],
    ),
    (
        "call-stretch-capped-without-a-table",
        "cpu_cores = 8",
        "cpu_cores = 8\nshared_cores = true\ntime_slicing = true\ncall_stretch_capped = true",
        ["host.call_stretch_capped", "needs call_stretch"],
    ),
    (
        "call-stretch-capped-and-weighted",
        "cpu_cores = 8",
        "cpu_cores = 8\nshared_cores = true\ntime_slicing = true\ncall_stretch = [1, 1.2]\n"
        "call_stretch_weighted = true\ncall_stretch_capped = true",
        ["host.call_stretch_capped", "not weighted"],
    ),
    (
        "call-stretch-capped-not-a-bool",
        "cpu_cores = 8",
        "cpu_cores = 8\nshared_cores = true\ntime_slicing = true\ncall_stretch = [1, 1.2]\n"
        "call_stretch_capped = 1",
        ["host.call_stretch_capped", "true or false"],
    ),
    (
        "call-on-core-with-a-capped-stretch",
        "cpu_cores = 8",
        "cpu_cores = 8\nshared_cores = true\ntime_slicing = true\ncall_stretch = [1, 1.2]\n"
        "call_stretch_capped = true\ncall_on_core = 0.9",
        ["host.call_on_core", "call_stretch_capped"],
    ),
    (
        "call-on-core-zero",
        "cpu_cores = 8",
        "cpu_cores = 8\nshared_cores = true\ntime_slicing = true\ncall_on_core = 0",
        ["host.call_on_core", "a number"],
    ),
    (
        "call-on-core-above-one",
        "cpu_cores = 8",
        "cpu_cores = 8\nshared_cores = true\ntime_slicing = true\ncall_on_core = 1.2",
        ["host.call_on_core", "a number"],
    ),
    (
        "call-on-core-without-shared-cores",
        "cpu_cores = 8",
        "cpu_cores = 8\ntime_slicing = true\ncall_on_core = 0.9",
        ["host.call_on_core", "shared_cores", "processor sharing"],
    ),
    (
        "call-on-core-with-a-lossy-stretch",
        "cpu_cores = 8",
        "cpu_cores = 8\nshared_cores = true\ntime_slicing = true\ncall_stretch = [1, 1.2]\n"
        "call_on_core = 0.9",
        ["host.call_on_core", "call_stretch_weighted"],
    ),
    (
        "lag-negative",
        "cpu_cores = 8",
        "cpu_cores = 8\nshared_cores = true\ntime_slicing = true\nlag_ms = -1",
        ["host.lag_ms", "a number"],
    ),
    (
        "lag-without-processor-sharing",
        "cpu_cores = 8",
        "cpu_cores = 8\nshared_cores = true\ntime_slicing = true\nslice_ms = 4\nlag_ms = 1",
        ["host.lag_ms", "processor sharing"],
    ),
    (
        "lag-with-calls-off-their-core",
        "cpu_cores = 8",
        "cpu_cores = 8\nshared_cores = true\ntime_slicing = true\ncall_on_core = 0.9\nlag_ms = 1",
        ["host.lag_ms", "call_on_core"],
    ),
    (
        "speed-without-its-epochs",
        "cpu_cores = 8",
        "cpu_cores = 8\ntime_slicing = true\nspeed_cv = 0.1",
        ["host.speed_cv", "speed_ms both > 0"],
    ),
    (
        "speed-epochs-without-a-cv",
        "cpu_cores = 8",
        "cpu_cores = 8\ntime_slicing = true\nspeed_ms = 100",
        ["host.speed_ms", "speed_cv and speed_ms both > 0"],
    ),
    (
        "speed-negative",
        "cpu_cores = 8",
        "cpu_cores = 8\ntime_slicing = true\nspeed_cv = -0.1\nspeed_ms = 100",
        ["host.speed_cv"],
    ),
    (
        "speed-without-time-slicing",
        "cpu_cores = 8",
        "cpu_cores = 8\nspeed_cv = 0.1\nspeed_ms = 100",
        ["host.speed_cv", "time_slicing"],
    ),
    (
        "speed-series-without-its-bins",
        "cpu_cores = 8",
        "cpu_cores = 8\ntime_slicing = true\nspeed_series = [1.0, 1.2]",
        ["host.speed_series", "speed_series_ms > 0 both"],
    ),
    (
        "speed-series-bins-without-a-series",
        "cpu_cores = 8",
        "cpu_cores = 8\ntime_slicing = true\nspeed_series_ms = 250",
        ["host.speed_series_ms", "both given"],
    ),
    (
        "speed-series-with-a-zero",
        "cpu_cores = 8",
        "cpu_cores = 8\ntime_slicing = true\nspeed_series = [1.0, 0]\nspeed_series_ms = 250",
        ["host.speed_series[1]"],
    ),
    (
        "speed-series-with-speed-cv",
        "cpu_cores = 8",
        "cpu_cores = 8\ntime_slicing = true\nspeed_cv = 0.1\nspeed_ms = 100\n"
        "speed_series = [1.0]\nspeed_series_ms = 250",
        ["host.speed_series", "one speed process"],
    ),
    (
        "speed-series-without-time-slicing",
        "cpu_cores = 8",
        "cpu_cores = 8\nspeed_series = [1.0]\nspeed_series_ms = 250",
        ["host.speed_series", "time_slicing"],
    ),
    (
        "speed-by-load-negative",
        "cpu_cores = 8",
        "cpu_cores = 8\ntime_slicing = true\nspeed_cv = 0.1\nspeed_ms = 250\nspeed_cv_busy = -0.1",
        ["host.speed_cv_busy"],
    ),
    (
        "speed-by-load-without-epochs",
        "cpu_cores = 8",
        "cpu_cores = 8\ntime_slicing = true\nspeed_cv_busy = 0.15",
        ["host.speed_cv_busy", "speed_cv"],
    ),
    (
        "speed-by-load-exponent-zero",
        "cpu_cores = 8",
        "cpu_cores = 8\ntime_slicing = true\nspeed_cv = 0.1\nspeed_ms = 250\nspeed_cv_busy = 0.2\n"
        "speed_busy_exponent = 0",
        ["host.speed_busy_exponent"],
    ),
    (
        "speed-by-load-exponent-alone",
        "cpu_cores = 8",
        "cpu_cores = 8\ntime_slicing = true\nspeed_cv = 0.1\nspeed_ms = 250\n"
        "speed_busy_exponent = 2",
        ["host.speed_busy_exponent", "speed_cv_busy"],
    ),
    (
        "run-speed-negative",
        "cpu_cores = 8",
        "cpu_cores = 8\ntime_slicing = true\nspeed_run_cv = -0.1",
        ["host.speed_run_cv"],
    ),
    (
        "run-speed-without-time-slicing",
        "cpu_cores = 8",
        "cpu_cores = 8\nspeed_run_cv = 0.03",
        ["host.speed_run_cv", "time_slicing"],
    ),
    (
        "run-speed-with-a-series",
        "cpu_cores = 8",
        "cpu_cores = 8\ntime_slicing = true\nspeed_run_cv = 0.03\n"
        "speed_series = [1.0]\nspeed_series_ms = 250",
        ["host.speed_run_cv", "speed_series"],
    ),
    (
        "neighbour-not-a-quantile-function",
        "cpu_cores = 8",
        "cpu_cores = 8\nbusy_run_cores = [[0.1, 0], [1, 0.5]]",
        ["host.busy_run_cores[0]", "p ascending from 0 to 1"],
    ),
    (
        "neighbour-beyond-the-cores",
        "cpu_cores = 8",
        "cpu_cores = 8\nbusy_cores = 1\nbusy_run_cores = [[0, 0], [1, 7]]",
        ["host.busy_run_cores", "below cpu_cores (8)"],
    ),
    (
        "stops-without-time-slicing",
        "cpu_cores = 8",
        "cpu_cores = 8\nstop_ms = [[0, 1], [1, 5]]\nstops_per_s = 1",
        ["host.stop_ms", "processor sharing without a lag"],
    ),
    (
        "stops-of-no-length",
        "cpu_cores = 8",
        "cpu_cores = 8\ntime_slicing = true\nstop_ms = [[0, 0], [1, 0]]\nstops_per_s = 1",
        ["host.stop_ms", "last point above 0"],
    ),
    (
        "stops-without-a-rate",
        "cpu_cores = 8",
        "cpu_cores = 8\ntime_slicing = true\nstop_ms = [[0, 1], [1, 5]]",
        ["host.stops_per_s is missing", "stop_ms needs"],
    ),
    (
        "a-stop-rate-without-stops",
        "cpu_cores = 8",
        "cpu_cores = 8\ntime_slicing = true\nstops_per_s = 1",
        ["host.stops_per_s", "exactly when stop_ms"],
    ),
    (
        "run-stops-without-stops",
        "cpu_cores = 8",
        "cpu_cores = 8\ntime_slicing = true\nstop_run_per_s = [[0, 0], [1, 3]]",
        ["host.stop_run_per_s", "needs stop_ms"],
    ),
    (
        "an-unknown-deadline-rule",
        "cpu_cores = 8",
        'cpu_cores = 8\ndeadline_rule = "end"',
        ["host.deadline_rule", "must be start or finish"],
    ),
    (
        "run-queues-without-time-slicing",
        "cpu_cores = 8",
        "cpu_cores = 8\nrun_queues = true",
        ["host.run_queues", "time_slicing", "processor sharing"],
    ),
    (
        "run-queues-with-slices",
        "cpu_cores = 8",
        "cpu_cores = 8\ntime_slicing = true\nslice_ms = 4\nrun_queues = true",
        ["host.run_queues", "slice_ms = 0"],
    ),
    (
        "run-queues-not-a-bool",
        "cpu_cores = 8",
        'cpu_cores = 8\ntime_slicing = true\nrun_queues = "yes"',
        ["host.run_queues", "true or false"],
    ),
    (
        "handoff-negative",
        "cpu_cores = 8",
        "cpu_cores = 8\nhandoff_ms = -1",
        ["host.handoff_ms"],
    ),
    (
        "handoff-dist-unknown",
        "cpu_cores = 8",
        'cpu_cores = 8\nhandoff_dist = "lognormal"',
        ["host.handoff_dist", "constant or exponential"],
    ),
    (
        "handoff-with-interpreter",
        "cpu_cores = 8",
        "cpu_cores = 8\nhandoff_ms = 0.5\ninterpreter = { batch_ms = 1 }",
        ["host.handoff_ms", "must be 0 with [host.interpreter]"],
    ),
    (
        "wake-with-handoff",
        "cpu_cores = 8",
        "cpu_cores = 8\nhandoff_ms = 0.3\npre_wake_ms = [[0, 0.01], [1, 2]]",
        ["host.pre_wake_ms", "handoff_ms > 0"],
    ),
    (
        "wake-with-interpreter",
        "cpu_cores = 8",
        "cpu_cores = 8\npost_wake_ms = [[0, 0.01], [1, 2]]\ninterpreter = { batch_ms = 1 }",
        ["host.post_wake_ms", "[host.interpreter]"],
    ),
    (
        "wake-spell-without-a-table",
        "cpu_cores = 8",
        "cpu_cores = 8\nwake_spell_ms = 4\nwake_spell_share = 0.9",
        ["host.wake_spell_ms", "pre_wake_ms or post_wake_ms"],
    ),
    (
        "wake-spell-without-a-share",
        "cpu_cores = 8",
        "cpu_cores = 8\npre_wake_ms = [[0, 0.01], [1, 2]]\nwake_spell_ms = 4",
        ["host.wake_spell_ms", "both > 0"],
    ),
    (
        "wake-spell-share-alone",
        "cpu_cores = 8",
        "cpu_cores = 8\npre_wake_ms = [[0, 0.01], [1, 2]]\nwake_spell_share = 0.5",
        ["host.wake_spell_share", "both > 0"],
    ),
    (
        "wake-spell-share-above-one",
        "cpu_cores = 8",
        "cpu_cores = 8\npre_wake_ms = [[0, 0.01], [1, 2]]\nwake_spell_ms = 4\n"
        "wake_spell_share = 1.5",
        ["host.wake_spell_share"],
    ),
    (
        "wake-spell-negative",
        "cpu_cores = 8",
        "cpu_cores = 8\npre_wake_ms = [[0, 0.01], [1, 2]]\nwake_spell_ms = -1\n"
        "wake_spell_share = 0.5",
        ["host.wake_spell_ms"],
    ),
    (
        "client-falling",
        "cpu_cores = 8",
        "cpu_cores = 8\nclient_ms = [[0, 0.5], [0.5, 0.1], [1, 4]]",
        ["host.client_ms[1]", "not below the previous"],
    ),
    (
        "gpu-queue-unknown",
        "cpu_cores = 8",
        'cpu_cores = 8\ngpu_queue = "lifo"',
        ['host.gpu_queue = "lifo"', "must be share or fifo"],
    ),
    (
        "gpu-queue-fifo-eta",
        "cpu_cores = 8",
        'cpu_cores = 8\ngpu_queue = "fifo"\neta = [1.0, 1.2]',
        ["host.eta = [1.0, 1.2]", "one job runs at a time"],
    ),
    (
        "gpu-queue-fifo-shared",
        "cpu_cores = 8",
        'cpu_cores = 8\ngpu_queue = "fifo"\nshared_cores = true',
        ['host.gpu_queue = "fifo"', "needs shared_cores = false"],
    ),
    (
        "interpreter-not-table",
        "cpu_cores = 8",
        "cpu_cores = 8\ninterpreter = true",
        ["host.interpreter = true", "must be a table: [host.interpreter]"],
    ),
    (
        "interpreter-unknown-key",
        "cpu_cores = 8",
        "cpu_cores = 8\ninterpreter = { batch_ms = 1, gil = 1 }",
        ["host.interpreter.gil"],
    ),
    (
        "interpreter-handoff-ms",
        "cpu_cores = 8",
        "cpu_cores = 8\ninterpreter = { handoff_ms = -0.5 }",
        ["host.interpreter.handoff_ms = -0.5", ">= 0"],
    ),
    (
        "interpreter-batch-ms",
        "cpu_cores = 8",
        "cpu_cores = 8\ninterpreter = { batch_ms = -1 }",
        ["host.interpreter.batch_ms = -1", ">= 0"],
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "needles"), [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED]
)
def test_malformed_scenario_is_one_line_naming_key_and_value(tmp_path, old, new, needles) -> None:
    with pytest.raises(LanesError) as info:
        Scenario.load(write(tmp_path, edit(old, new)))
    err = info.value
    assert err.code == "scenario_invalid"
    assert "\n" not in err.message
    assert err.message.startswith(f"scenario {tmp_path / 't.toml'}: ")
    for needle in needles:
        assert needle in err.message, err.message


def test_service_must_be_tables(tmp_path: Path) -> None:
    text = BASE.replace(SERVICES, "").replace("slo_ms = 150", "slo_ms = 150\nservice = [1]")
    with pytest.raises(LanesError) as info:
        Scenario.load(write(tmp_path, text))
    assert info.value.message.endswith("service[0] = 1: must be one or more [[service]] tables")


def test_bad_trace_content_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_text("1.0\n2.0\nsoon\n")
    text = edit(B_ARRIVAL, 'arrival = { kind = "trace", path = "t.txt" }')
    with pytest.raises(LanesError) as info:
        Scenario.load(write(tmp_path, text))
    assert info.value.code == "scenario_invalid"
    assert 'service[1].arrival.path = "t.txt"' in info.value.message
    assert "line 3" in info.value.message
    assert "'soon'" in info.value.message


@pytest.mark.parametrize("name", ["nope", "nope.toml", "dir/nope.toml"])
def test_missing_scenario_names_the_builtins(name: str) -> None:
    with pytest.raises(LanesError) as info:
        Scenario.load(name)
    assert info.value.code == "scenario_not_found"
    assert info.value.message == (
        f"scenario {name}: no such file, and not a built-in scenario (ocr)"
    )


def test_a_directory_is_not_a_scenario(tmp_path: Path) -> None:
    with pytest.raises(LanesError) as info:
        Scenario.load(tmp_path)
    assert info.value.code == "scenario_not_found"
    assert "\n" not in info.value.message


def test_binary_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(LanesError) as info:
        Scenario.load(path)
    assert info.value.code == "scenario_invalid"
    assert "UTF-8" in info.value.message


def test_batching_table_round_trips(tmp_path: Path) -> None:
    text = edit(
        A_GPU,
        A_GPU + "\nbatching = { max_batch_size = 16, batch_timeout_micros = 500, "
        "num_batch_threads = 2, batch_ms = [[4, 8], [16, 20.5]] }",
    )
    core = Scenario.load(write(tmp_path, text)).to_core()
    assert core["services"][0]["batching"] == {
        "max_batch_size": 16,
        "batch_timeout_micros": 500,
        "num_batch_threads": 2,
        "batch_ms": [[4, 8.0], [16, 20.5]],
    }
    assert "batching" not in core["services"][1]  # absent: batches of one


def test_client_connections_reach_the_core_only_when_set(tmp_path: Path) -> None:
    text = edit("share = 0.4", "share = 0.4\nclient_connections = 64")
    a, b = Scenario.load(write(tmp_path, text)).to_core()["services"]
    assert "client_connections" not in a
    assert b["client_connections"] == 64
    # The core takes it and runs (a limit on one service only).
    point, spans = timeline(Scenario.load(write(tmp_path, text)), "fifo", 0.5, 1, 2_000)
    assert point["throughput_rps"] > 0 and spans


@pytest.mark.parametrize("value", ["0", "-3", "2.5", '"many"', "true"])
def test_bad_client_connections_are_named(tmp_path: Path, value: str) -> None:
    text = edit("share = 0.4", f"share = 0.4\nclient_connections = {value}")
    with pytest.raises(LanesError, match=r"client_connections"):
        Scenario.load(write(tmp_path, text))
