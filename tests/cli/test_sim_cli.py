"""``lanes sim`` end to end: through ``main`` and through a real ``python -m lanes`` process."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lanes._core as core
from lanes.cli import main

REPO = Path(__file__).resolve().parents[2]
FAST = ["--requests", "20000", "--seeds", "1"]
SWEEP = ["--policies", "independent,sjf", "--loads", "0.5,0.8"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

LATENCY_KEYS = {"mean", "p50", "p90", "p99", "p999", "max"}
POINT_TYPES = {
    "policy": str,
    "load": float,
    "seed": int,
    "requests": int,
    "offered_rps": float,
    "throughput_rps": float,
    "goodput_rps": float,
    "latency_ms": dict,
    "slo_attainment": float,
    "dropped": int,
    "max_wait_ms": float,
    "p99_slowdown": float,
    "gpu_busy": float,
    "gpu_imbalance": float,
    "cpu_idle": float,
    "gpu_time_s": dict,
    "mean_batch_size": float,
    "call_ms": float,
    "call_cost_ms": float,
    "services": dict,
}
SERVICE_TYPES = {
    "requests": int,
    "throughput_rps": float,
    "latency_ms": dict,
    "mean": float,
    "p50": float,
    "p90": float,
    "p99": float,
    "p999": float,
    "p99_slowdown": float,
    "max_wait_ms": float,
    "slo_attainment": float,
    "dropped": int,
    "mean_batch_size": float,
    "call_ms": float,
    "call_cost_ms": float,
}


def number(value: object, kind: type) -> bool:
    """JSON has one number type: an int where a float is expected is fine, a bool is not."""
    if isinstance(value, bool):
        return False
    return isinstance(value, (int, float)) if kind is float else isinstance(value, kind)


def check_types(record: dict, types: dict[str, type], where: str) -> None:
    missing = set(types) - set(record)
    assert not missing, f"{where}: missing {sorted(missing)}"
    for key, kind in types.items():
        assert number(record[key], kind), f"{where}.{key} = {record[key]!r}: want {kind.__name__}"


def check_latency(latency: dict, where: str) -> None:
    assert set(latency) >= LATENCY_KEYS, where
    for key in LATENCY_KEYS:
        assert number(latency[key], float), f"{where}.{key}"


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["sim", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_default_run_prints_the_table(capsys) -> None:
    status, out, err = run_main(capsys, *FAST)
    assert status == 0, err
    assert "\x1b" not in out  # not a terminal: plain text
    for policy in ("independent", "fifo", "sjf"):  # the default policies
        for load in ("0.3", "0.5", "0.7", "0.8", "0.9"):  # and loads
            assert any(line.split()[:2] == [policy, load] for line in out.splitlines() if line)
    assert "cnn/rnn_zh/rnn_en" in out


def test_json_has_every_key_with_the_right_types(capsys, tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    status, _, err = run_main(capsys, *FAST, *SWEEP, "--seeds", "2", "--json", str(path))
    assert status == 0, err
    doc = json.loads(path.read_text())
    assert doc["scenario"] == "ocr"
    assert doc["command"].startswith("lanes sim --requests 20000")
    assert "capacity" not in doc
    points = doc["points"]
    assert [(p["policy"], p["load"], p["seed"]) for p in points] == [
        (policy, load, seed)
        for policy in ("independent", "sjf")
        for load in (0.5, 0.8)
        for seed in (1, 2)
    ]
    for i, point in enumerate(points):
        where = f"points[{i}]"
        check_types(point, POINT_TYPES, where)
        check_latency(point["latency_ms"], f"{where}.latency_ms")
        assert 0.0 <= point["slo_attainment"] <= 1.0
        assert 0.0 <= point["gpu_busy"] <= 1.0
        assert 0.0 <= point["cpu_idle"] <= 1.0
        gpu_time = dict.fromkeys(("effective", "overlap", "queue"), float)
        check_types(point["gpu_time_s"], gpu_time, f"{where}.gpu_time_s")
        assert set(point["services"]) == {"cnn", "rnn_zh", "rnn_en"}
        for name, service in point["services"].items():
            check_types(service, SERVICE_TYPES, f"{where}.services.{name}")
            check_latency(service["latency_ms"], f"{where}.services.{name}.latency_ms")
            assert service["p99"] == service["latency_ms"]["p99"]


def test_capacity_table_and_json(capsys, tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    status, out, err = run_main(
        capsys, *FAST, *SWEEP, "--loads", "0.5", "--capacity", "--json", str(path)
    )
    assert status == 0, err
    assert "capacity" in out
    caps = json.loads(path.read_text())["capacity"]
    assert set(caps) == {"independent", "sjf"}
    for cap in caps.values():
        assert set(cap) == {"overall", "every_service"}
        assert all(number(v, float) and 0.0 <= v <= 10.0 for v in cap.values())  # ocr batches


def test_plot_writes_a_png(capsys, tmp_path: Path) -> None:
    path = tmp_path / "out.png"
    status, _, err = run_main(capsys, *FAST, *SWEEP, "--plot", str(path))
    assert status == 0, err
    assert path.read_bytes().startswith(PNG_MAGIC)
    assert path.stat().st_size > 10_000
    assert f"wrote {path}" in err


def test_same_seed_gives_identical_points(capsys, tmp_path: Path) -> None:
    docs = []
    for name in ("a.json", "b.json"):
        status, _, err = run_main(capsys, *FAST, *SWEEP, "--json", str(tmp_path / name))
        assert status == 0, err
        docs.append(json.loads((tmp_path / name).read_text())["points"])
    assert docs[0] == docs[1]


def test_trace_scenario_runs(capsys) -> None:
    scenario = str(REPO / "examples" / "scenarios" / "ocr-trace.toml")
    status, out, err = run_main(capsys, scenario, *FAST, *SWEEP)
    assert status == 0, err
    assert "ocr-trace" in out


def test_policy_arguments_with_commas(capsys) -> None:
    status, out, err = run_main(
        capsys, *FAST, "--loads", "0.5", "--policies", "limit:2,sjf:alpha=0.5,slack=20"
    )
    assert status == 0, err
    assert "limit:2" in out
    assert "sjf:alpha=0.5,slack=20" in out


def test_unknown_policy_is_refused_before_running(capsys, tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    status, out, err = run_main(capsys, *FAST, "--policies", "sjf,bogus", "--json", str(path))
    assert status == 2
    assert out == ""
    assert not path.exists()
    lines = err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("lanes sim: error: --policies: ")
    assert "bogus" in lines[0]
    for allowed in core.policy_names():
        assert allowed in lines[0]


def test_malformed_scenario(capsys, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    text = (REPO / "examples" / "scenarios" / "ocr.toml").read_text()
    bad.write_text(text.replace("share = 0.25", "share = -0.25"))
    status, out, err = run_main(capsys, str(bad), *FAST)
    assert status == 2
    assert out == ""
    assert err == (
        f"lanes sim: error: scenario {bad}: service[1].share = -0.25: "
        "must be a number > 0 and <= 1\n"
    )


BAD_OPTIONS = [
    (["--loads", "0.5,x"], "lanes sim: error: --loads '0.5,x': 'x' is not a number"),
    (["--loads", "0"], "lanes sim: error: --loads '0': a load must be a number > 0"),
    (["--seeds", "0"], "lanes sim: error: --seeds '0': must be a count from 1 to 1000"),
    (["--requests", "0"], "lanes sim: error: --requests 0: must be at least 1"),
    (["--threads", "-1"], "lanes sim: error: --threads -1: must be >= 0 (0: all cores)"),
    (["--policies", "fifo,fifo"], "lanes sim: error: --policies 'fifo,fifo': 'fifo' is given"),
    (["--json", "/nonexistent-dir/out.json"], "lanes sim: error: --json /nonexistent-dir/out."),
]


@pytest.mark.parametrize(("args", "start"), BAD_OPTIONS, ids=[" ".join(a) for a, _ in BAD_OPTIONS])
def test_bad_options_are_one_line_and_exit_2(capsys, args: list[str], start: str) -> None:
    status, out, err = run_main(capsys, *args)
    assert status == 2
    assert out == ""
    assert len(err.splitlines()) == 1
    assert err.startswith(start), err


def lanes(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "100"}
    return subprocess.run(
        [sys.executable, "-m", "lanes", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
        check=False,
    )


def test_subprocess_run_with_json(tmp_path: Path) -> None:
    proc = lanes("sim", "ocr", *FAST, *SWEEP, "--json", "out.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "independent" in proc.stdout
    assert "\x1b" not in proc.stdout
    doc = json.loads((tmp_path / "out.json").read_text())
    assert len(doc["points"]) == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # no temporary left


def test_subprocess_unknown_policy(tmp_path: Path) -> None:
    proc = lanes("sim", "--policies", "nope", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert "'nope'" in lines[0]
    assert "independent" in lines[0]
    assert "sjf" in lines[0]


def test_subprocess_malformed_scenario(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text('slo_ms = 150\n[host]\ngpus = "2"\n')
    proc = lanes("sim", "bad.toml", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == (
        'lanes sim: error: scenario bad.toml: host.gpus = "2": must be an integer >= 1 and <= 64\n'
    )
