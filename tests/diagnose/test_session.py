"""A profiling session on real processes: what it records, and that a profiler failing
mid-run or a server exiting costs only its part of the diagnosis."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from lanes.diagnose.config import ProfileConfig
from lanes.diagnose.session import Session
from lanes.diagnose.tools import discover

BUSY = """
import threading, time
def spin():
    t = time.time()
    while time.time() - t < 30:
        sum(range(1000))
threads = [threading.Thread(target=spin) for _ in range(2)]
for th in threads:
    th.start()
for th in threads:
    th.join()
"""


@pytest.fixture
def busy() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", BUSY])
    time.sleep(0.3)  # the interpreter starts its threads
    yield proc
    proc.kill()
    proc.wait()


def _require(name: str) -> None:
    tool = discover()[name]
    if tool.path is None:
        if os.environ.get("LANES_REQUIRE_PROFILERS") == "1":
            pytest.fail(f"LANES_REQUIRE_PROFILERS=1 but {tool.why_not}")
        pytest.skip(str(tool.why_not))


def test_a_session_records_cpu_threads_stacks_and_renders(
    busy: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    _require("py-spy")
    s = Session(ProfileConfig(rate_hz=99, interval_ms=50, syscalls=False), busy.pid, tmp_path / "p")
    s.window(time.time(), 1.5)
    d = s.finish(requests=100, dispersion=None, arrival=None)
    assert d["skipped"] == []
    doc = json.loads((tmp_path / "p" / "profile.json").read_text())
    assert len(doc["cpu"]["samples"]) >= 10
    assert len(doc["cpu"]["samples"][0]["cores"]) == psutil.cpu_count()
    samples = doc["processes"][str(busy.pid)]["samples"]
    assert samples[-1]["threads"] == 3  # main + two spinners
    assert samples[-1]["user_s"] > samples[0]["user_s"]
    oncpu = (tmp_path / "p" / "oncpu.folded").read_text()
    assert "spin (<string>:" in oncpu
    assert d["threads"] == {"first": 3, "last": 3, "peak": 3}
    svg = (tmp_path / "p" / d["flamegraphs"]["oncpu"]).read_text()
    assert svg.startswith("<?xml") and "spin" in svg


def test_a_profiler_killed_mid_run_costs_only_its_part(
    busy: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    _require("py-spy")
    s = Session(ProfileConfig(interval_ms=50, syscalls=False), busy.pid, tmp_path / "p")
    s.window(time.time(), 2.0)
    deadline = time.monotonic() + 10
    spies: list[psutil.Process] = []
    while not spies and time.monotonic() < deadline:
        spies = [c for c in psutil.Process().children() if "py-spy" in c.name()]
        time.sleep(0.05)  # polling for the recorders to start, bounded
    assert spies, "the session started no py-spy"
    for spy in spies:
        spy.send_signal(signal.SIGKILL)
    d = s.finish(requests=10, dispersion=None, arrival=None)
    assert any(line.startswith("stacks:") for line in d["skipped"]), d["skipped"]
    assert d["core_busy"] and d["threads"]["last"] == 3  # the rest was kept
    assert (tmp_path / "p" / "profile.json").is_file()


def test_a_server_that_exits_mid_window_keeps_what_was_sampled(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.8)"])
    s = Session(ProfileConfig(interval_ms=50, stacks=False, syscalls=False), proc.pid, tmp_path)
    s.window(time.time(), 1.5)
    proc.wait()
    d = s.finish(requests=0, dispersion=None, arrival=None)
    doc = json.loads((tmp_path / "profile.json").read_text())
    assert 3 <= len(doc["processes"][str(proc.pid)]["samples"]) < 30
    assert d["findings"] == []
