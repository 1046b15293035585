"""The single-header C client (clients/c/lanes_arbiter.h): its example is compiled with gcc as
strict C99 with every warning an error, and run against a real ``lanes arbiter`` daemon."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from client_support import Daemon

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "c"


@pytest.fixture
def example(tmp_path: Path) -> Path:
    gcc = shutil.which("gcc")
    assert gcc is not None, "gcc is needed to build the C client's example"
    exe = tmp_path / "example"
    flags = ["-std=c99", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-O2"]
    subprocess.run([gcc, *flags, "-o", str(exe), str(CLIENT / "example.c")], check=True)
    return exe


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    d = Daemon(tmp_path / "arb.sock", "sim:2").start()
    yield d
    d.stop()


def test_the_c_example_runs_cycles_against_the_daemon(example: Path, daemon: Daemon) -> None:
    out = subprocess.run(
        [str(example), str(daemon.path), "200"], capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0, out.stderr + out.stdout
    lines = out.stdout.splitlines()
    assert lines[0].endswith("2 devices: sim:0 sim:1"), lines[0]
    assert lines[1].startswith("granted sim:"), lines[1]
    assert "cycles 200," in out.stdout
    assert "device 999: reject reason 3" in out.stdout
    stats = next(line for line in lines if line.startswith("stats "))
    assert stats.startswith("stats {"), stats


def test_the_c_client_reports_a_missing_daemon(example: Path, tmp_path: Path) -> None:
    out = subprocess.run(
        [str(example), str(tmp_path / "none.sock")], capture_output=True, text=True, timeout=10
    )
    assert out.returncode == 1
    assert "connect" in out.stderr
