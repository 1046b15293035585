"""``lanes serve`` refusing to start: every bad setting ends the command with exit status 2 and
one line on stderr naming the problem, before any model loads or any port opens."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lanes.cli import main

PREFIX = "lanes serve: error: "


@pytest.fixture(autouse=True)
def no_serve_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("LANES_SERVE_"):
            monkeypatch.delenv(key)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with one small python model."""
    folder = tmp_path / "repo" / "echo"
    folder.mkdir(parents=True)
    (folder / "model.py").write_text("def predict(batch):\n    return {'y': batch['x']}\n")
    (folder / "model.toml").write_text(
        'adapter = "python"\nfile = "model.py"\n'
        '[[inputs]]\nname = "x"\ndatatype = "FP32"\nshape = [-1, 2]\n'
        '[[outputs]]\nname = "y"\ndatatype = "FP32"\nshape = [-1, 2]\n'
    )
    return tmp_path / "repo"


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def refused(capsys: pytest.CaptureFixture[str], args: list[str]) -> str:
    """Run ``lanes serve ARGS`` in-process; it must exit 2 with one line on stderr."""
    assert main(["serve", *args]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(PREFIX) and err.endswith("\n") and err.count("\n") == 1, err
    return err.removeprefix(PREFIX).rstrip("\n")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["--devices", "gpu:0"],
            "--devices 'gpu:0': unknown kind 'gpu'; allowed: auto, gpu-like, cpu",
        ),
        (["--devices", "sim:0"], "--devices 'sim:0': count must be 1..64"),
        (["--devices", "cpu,sim:2"], "mixes kinds ['cpu', 'sim']"),
        (["--devices", "cuda:63"], "cuda:63 is not present"),
        (["--policy", "fastest"], "--policy = 'fastest': "),
        (["--policy", "limit:x"], "--policy = 'limit:x': "),
        (["--port", "http"], "--port = 'http': not a valid value"),
        (["--port", "70000"], "--port = 70000: must be 0..65535 (0: any free port)"),
        (["--port", "-1"], "--port = -1: must be 0..65535"),
        (["--workers", "0"], "--workers = 0: must be >= 1"),
        (["--max-body-mb", "0"], "--max-body-mb = 0.0: must be in (0, 4096]"),
        (["--zoo-backend", "tf"], "--zoo-backend = 'tf': allowed are onnx, torch"),
        (["--cuda-graphs"], "--cuda-graphs = true: CUDA graphs are the demo zoo's torch backend's"),
        (["--max-connections", "0"], "--max-connections = 0: must be 1..1000000"),
        (["--max-connections", "many"], "--max-connections = 'many': not a valid value"),
        (["--header-timeout", "0"], "--header-timeout = 0.0: must be 0.001..86400 seconds"),
        (["--body-timeout", "-1"], "--body-timeout = -1.0: must be 0.001..86400 seconds"),
        (["--grpc-keepalive", "1e9"], "--grpc-keepalive = 1000000000.0: must be 0.001..86400"),
        (["--max-header-kb", "4"], "--max-header-kb = 4: must be 8..1024"),
    ],
)
def test_a_bad_setting_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], repo: Path, args: list[str], says: str
) -> None:
    assert says in refused(capsys, ["--models", str(repo), *args])


def test_cuda_graphs_need_the_zoo_on_torch(capsys: pytest.CaptureFixture[str]) -> None:
    assert refused(capsys, ["--demo", "--devices", "cpu", "--cuda-graphs"]) == (
        "--cuda-graphs = true: CUDA graphs are the demo zoo's torch backend's "
        "(set zoo_backend = torch and serve the demo zoo)"
    )


def test_a_missing_models_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    assert refused(capsys, ["--models", str(missing), "--devices", "cpu"]) == (
        f"--models = '{missing}': not a folder (a model repository is a folder)"
    )


def test_an_empty_models_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert "no models" in refused(capsys, ["--models", str(tmp_path), "--devices", "cpu"])


def test_a_port_in_use(capsys: pytest.CaptureFixture[str], repo: Path, busy_port: int) -> None:
    args = ["--models", str(repo), "--devices", "cpu", "--port", str(busy_port)]
    assert refused(capsys, args) == (
        f"cannot listen on 127.0.0.1:{busy_port}: Address already in use (see --host, --port)"
    )


def test_the_installed_command_refuses_the_same_way(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("lanes")
    command = [str(script)] if script.is_file() else [sys.executable, "-m", "lanes"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANES_SERVE_")}
    done = subprocess.run(
        [*command, "serve", "--models", str(tmp_path / "nowhere"), "--devices", "bogus"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith(PREFIX + "--devices 'bogus': unknown kind 'bogus'")
    assert done.stderr.count("\n") == 1
