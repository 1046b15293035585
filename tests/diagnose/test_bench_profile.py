"""`lanes bench URL --profile COMMAND`: the server started, profiled under the run, stopped,
the findings printed and the files written."""

from __future__ import annotations

import shlex
import socket
import subprocess
import sys
from pathlib import Path

ZOO = Path(__file__).parent / "zoo"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_bench_profile_command_prints_the_diagnosis_and_stops_the_server(tmp_path: Path) -> None:
    port = _free_port()
    command = shlex.join([sys.executable, str(ZOO / "clean.py"), "--port", str(port)])
    out = tmp_path / "prof"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "lanes",
            "bench",
            f"http://127.0.0.1:{port}/v2/models/zoo/infer",
            "--corpus",
            str(ZOO / "request.jsonl"),
            "-R",
            "100",
            "-d",
            "2s",
            "--profile",
            command,
            "--profile-out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Status codes: 200:" in done.stdout
    assert "Diagnosis of pid" in done.stdout
    assert "no finding" in done.stdout, done.stdout
    assert (out / "profile.json").is_file()
    with socket.socket() as s:  # the service was stopped with the run
        assert s.connect_ex(("127.0.0.1", port)) != 0


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lanes", "bench", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_bench_profile_a_command_that_cannot_start_is_one_line() -> None:
    done = _bench("http://127.0.0.1:9/", "-n", "1", "--profile", "no-such-server --port 9")
    assert done.returncode == 2
    assert "--profile no-such-server --port 9: cannot start" in done.stderr


def test_bench_profile_a_missing_pid_fails_before_any_load() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    done = _bench("http://127.0.0.1:9/", "-n", "1", "--profile", str(proc.pid))
    assert done.returncode == 2
    assert f"profile pid {proc.pid}: no such process" in done.stderr
    assert done.stdout == ""
