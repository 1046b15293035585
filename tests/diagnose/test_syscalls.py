"""Syscall counts from the real tools: perf trace attached to a process, strace -c's summary."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lanes.diagnose.syscalls import SyscallRecorder, parse_strace_c
from lanes.diagnose.tools import discover

STAT_LOOP = "import os, time\nt = time.time()\nwhile time.time() - t < 20:\n    os.stat('/')\n"


@pytest.mark.parametrize(("timed", "tool"), [(False, "perf stat"), (True, "perf trace")])
def test_perf_counts_a_process_syscalls_by_name(timed: bool, tool: str, tmp_path: Path) -> None:
    tools = discover()
    if tools["perf"].path is None:
        if os.environ.get("LANES_REQUIRE_PROFILERS") == "1":
            pytest.fail(f"LANES_REQUIRE_PROFILERS=1 but {tools['perf'].why_not}")
        pytest.skip(str(tools["perf"].why_not))
    proc = subprocess.Popen([sys.executable, "-c", STAT_LOOP])
    try:
        time.sleep(0.3)  # the interpreter starts
        rec = SyscallRecorder([proc.pid], tmp_path, tools, timed=timed)
        rec.start()
        time.sleep(1.0)  # the window
        block = rec.stop()
    finally:
        proc.kill()
        proc.wait()
    assert block is not None, rec.skipped
    assert block["tool"] == tool
    stat = block["calls"].get("newfstatat") or block["calls"].get("stat") or {}
    assert (stat.get("calls") or 0) > 100, block["calls"]
    assert (stat.get("time_ms") is not None) == timed


def test_strace_summary_parses() -> None:
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace not installed")
    done = subprocess.run(
        [strace, "-c", "-f", sys.executable, "-c", "import os\nfor _ in range(500): os.stat('/')"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"strace cannot run here: {done.stderr.strip().splitlines()[-1:]}")
    calls = parse_strace_c(done.stderr)
    stat = calls.get("newfstatat") or calls.get("stat") or {}
    assert stat.get("calls", 0) >= 500, calls
