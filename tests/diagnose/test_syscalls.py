"""Syscall counts from the real tools: perf trace attached to a process, strace -c's summary."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lanes.diagnose.session import _counted_requests
from lanes.diagnose.syscalls import SyscallRecorder, parse_strace_c
from lanes.diagnose.tools import Tool, discover

STAT_LOOP = "import os, time\nt = time.time()\nwhile time.time() - t < 20:\n    os.stat('/')\n"


def _perf_or_skip() -> dict[str, Tool]:
    """The profilers found here; a skip naming why when perf is missing or not permitted, a
    failure instead under ``LANES_REQUIRE_PROFILERS=1`` (what ``make test`` sets)."""
    tools = discover()
    if tools["perf"].path is None:
        if os.environ.get("LANES_REQUIRE_PROFILERS") == "1":
            pytest.fail(f"LANES_REQUIRE_PROFILERS=1 but {tools['perf'].why_not}")
        pytest.skip(str(tools["perf"].why_not))
    return tools


@pytest.mark.parametrize(("timed", "tool"), [(False, "perf stat"), (True, "perf trace")])
def test_perf_counts_a_process_syscalls_by_name(timed: bool, tool: str, tmp_path: Path) -> None:
    tools = _perf_or_skip()
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


CHURN = (
    "import threading, time\n"
    "t = time.time()\n"
    "while time.time() - t < 20:\n"
    "    ts = [threading.Thread(target=time.sleep, args=(0.001,)) for _ in range(20)]\n"
    "    [x.start() for x in ts]\n"
    "    [x.join() for x in ts]\n"
)


def test_perf_stat_attaches_to_a_process_whose_threads_come_and_go(tmp_path: Path) -> None:
    """A thread per request (the zoo's thread_pools case): perf stat can fail to attach when
    a thread exits while it opens counters; the recorder starts it again (one CI run lost the
    syscalls this way, about one attach in ten here)."""
    tools = _perf_or_skip()
    proc = subprocess.Popen([sys.executable, "-c", CHURN])
    try:
        time.sleep(1.0)  # its main thread settles (the attach rule)
        for i in range(5):
            folder = tmp_path / str(i)
            folder.mkdir()
            rec = SyscallRecorder([proc.pid], folder, tools)
            rec.start()
            time.sleep(0.2)
            block = rec.stop()
            assert block is not None, rec.skipped
            calls = block["calls"]
            # the request threads' sleeps, counted through the main thread's inherited counters
            assert (calls.get("clock_nanosleep") or {}).get("calls", 0) > 0, calls
    finally:
        proc.kill()
        proc.wait()


def test_a_tracer_that_fails_to_attach_is_started_again(tmp_path: Path) -> None:
    """The attach rule: perf behind a wrapper that exits at once on its first two starts (as
    perf does on "No such process") counts from its third, and the block says so."""
    tools = _perf_or_skip()
    count = tmp_path / "starts"
    wrapper = tmp_path / "flaky-perf"
    wrapper.write_text(
        "#!/bin/sh\n"
        '[ "$1" = list ] && exec ' + str(tools["perf"].path) + ' "$@"\n'
        f"n=$(cat {count} 2>/dev/null || echo 0); echo $((n + 1)) > {count}\n"
        f'[ "$n" -lt 2 ] && {{ echo "No such process" >&2; exit 255; }}\n'
        f'exec {tools["perf"].path} "$@"\n'
    )
    wrapper.chmod(0o755)
    flaky = {**tools, "perf": Tool("perf", str(wrapper))}
    proc = subprocess.Popen([sys.executable, "-c", STAT_LOOP])
    try:
        time.sleep(0.3)
        rec = SyscallRecorder([proc.pid], tmp_path, flaky)
        rec.start()
        time.sleep(0.5)
        block = rec.stop()
    finally:
        proc.kill()
        proc.wait()
    assert block is not None, rec.skipped
    assert block["attempts"] == 3
    assert 0.3 < block["seconds"] < 5.0
    # the window's requests scaled to the counted seconds
    assert _counted_requests(1000, block, block["seconds"] * 4) == 250
    assert _counted_requests(1000, {**block, "attempts": 1}, 10.0) == 1000


def test_a_tracer_that_never_attaches_is_skipped_with_its_last_words(tmp_path: Path) -> None:
    tools = _perf_or_skip()
    wrapper = tmp_path / "broken-perf"
    wrapper.write_text(
        "#!/bin/sh\n"
        '[ "$1" = list ] && exec ' + str(tools["perf"].path) + ' "$@"\n'
        'echo "perf: No such process" >&2; exit 255\n'
    )
    wrapper.chmod(0o755)
    rec = SyscallRecorder([os.getpid()], tmp_path, {**tools, "perf": Tool("perf", str(wrapper))})
    rec.start()
    assert rec.stop() is None
    assert rec.skipped == [
        "syscalls: perf stat recorded nothing (4 attempts) — perf: No such process"
    ]
