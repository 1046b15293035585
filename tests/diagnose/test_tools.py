"""Profiler discovery (lanes.diagnose.tools) with the real tools, and the reasons it gives with
stand-ins that refuse the way a locked-down kernel or container does.

A tool that is not installed is a skip with the reason, except under LANES_REQUIRE_PROFILERS=1
(``make test`` sets it: its setup installs them), where it fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lanes.diagnose import tools
from lanes.diagnose.tools import NAMES, Tool, discover

REQUIRED = os.environ.get("LANES_REQUIRE_PROFILERS") == "1"


def usable(name: str) -> str:
    tool = discover()[name]
    if tool.path is not None:
        return tool.path
    assert tool.why_not is not None
    if REQUIRED and "not installed" in tool.why_not:
        pytest.fail(f"LANES_REQUIRE_PROFILERS=1 and {tool.why_not}")
    pytest.skip(tool.why_not)


def stand_in(folder: Path, name: str, script: str) -> str:
    """An executable shell script called ``name`` in ``folder``."""
    path = folder / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return str(path)


def test_discover_says_for_each_tool_where_or_why_not() -> None:
    found = discover()
    assert list(found) == list(NAMES)
    for name, tool in found.items():
        assert tool.name == name
        assert (tool.path is None) != (tool.why_not is None), tool
        if tool.path is not None:
            assert Path(tool.path).is_file() and os.access(tool.path, os.X_OK)
            assert tool.skip_line is None
        else:
            assert tool.why_not is not None and tool.skip_line is not None
            assert tool.why_not.startswith(f"{name}: ")
            assert "\n" not in tool.why_not
            assert tool.skip_line.startswith(f"{name}: skipped — ")
            if REQUIRED:
                assert "not installed" not in tool.why_not, tool.why_not


def test_required_tools_are_installed() -> None:
    if not REQUIRED:
        pytest.skip("LANES_REQUIRE_PROFILERS is not 1 (make test sets it)")
    missing = [t.why_not for t in discover().values() if t.why_not and "not installed" in t.why_not]
    assert not missing, missing


def test_py_spy_comes_from_the_venv_first() -> None:
    beside = Path(sys.executable).parent / "py-spy"
    if not beside.is_file():
        pytest.skip(f"no py-spy beside {sys.executable}")
    assert tools.find("py-spy") == str(beside)


def test_discover_is_cached_per_process() -> None:
    first = discover()
    start = time.perf_counter()
    again = discover()
    assert time.perf_counter() - start < 0.05
    assert again == first
    again.clear()  # a copy: the cache is not touched
    assert discover() == first
    assert discover(refresh=True).keys() == first.keys()


def test_missing_tool_says_what_installs_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert tools._probe("strace") == Tool(
        "strace", None, "strace: not installed (Debian's strace; make setup installs it)"
    )
    assert tools._probe("perf").why_not == (
        "perf: not installed (Debian's linux-perf; make setup installs it)"
    )


def test_strace_attach_refused_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # What strace prints where ptrace attach is blocked (seccomp, Yama, a container runtime).
    fake = stand_in(
        tmp_path,
        "strace",
        'case "$1" in -c) exit 0;; esac\n'
        'echo "strace: attach: ptrace(PTRACE_SEIZE, 4242): Operation not permitted" >&2\n'
        "exit 1\n",
    )
    reason = "attach not permitted (ptrace(PTRACE_SEIZE, 4242): Operation not permitted)"
    assert tools.check_strace(fake) == reason
    monkeypatch.setattr(tools, "find", lambda name: fake)
    tool = tools._probe("strace")
    assert tool == Tool("strace", None, f"strace: {reason}")
    assert tool.skip_line == f"strace: skipped — {reason}"


def test_strace_refused_outright(tmp_path: Path) -> None:
    fake = stand_in(
        tmp_path,
        "strace",
        'echo "strace: test_ptrace_get_syscall_info: PTRACE_TRACEME: Operation not permitted" >&2\n'
        'echo "strace: exec: Operation not permitted" >&2\nexit 1\n',
    )
    assert tools.check_strace(fake) == "tracing not permitted (exec: Operation not permitted)"


def test_perf_refused_names_the_paranoid_level(tmp_path: Path) -> None:
    # perf 6.1's message where perf_event_paranoid forbids it; the levels' list comes last.
    fake = stand_in(
        tmp_path,
        "perf",
        "cat >&2 <<'EOF'\nError:\n"
        "Access to performance monitoring and observability operations is limited.\n"
        "Consider adjusting /proc/sys/kernel/perf_event_paranoid setting to open\n"
        "perf_event_paranoid setting is 3:\n"
        "  -1: Allow use of all performance monitoring and observability operations\n"
        "EOF\nexit 255\n",
    )
    paranoid = Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip()
    assert tools.check_perf(fake) == (
        f"recording not permitted (perf_event_paranoid={paranoid}: Access to performance "
        "monitoring and observability operations is limited.)"
    )


def test_perf_attach_refused(tmp_path: Path) -> None:
    # Recording its own child works; attaching to another process does not.
    fake = stand_in(
        tmp_path,
        "perf",
        'for a in "$@"; do [ "$a" = -p ] && break; done\n'
        '[ "$a" = -p ] || exit 0\n'
        'printf "Error:\\nThe sys_perf_event_open() syscall returned with 1 '
        '(Operation not permitted) for event (cpu-clock).\\n" >&2\nexit 255\n',
    )
    why = tools.check_perf(fake)
    assert why is not None and why.startswith("attach not permitted (perf_event_paranoid=")
    assert why.endswith("returned with 1 (Operation not permitted) for event (cpu-clock).)")


def test_py_spy_refused(tmp_path: Path) -> None:
    fake = stand_in(
        tmp_path,
        "py-spy",
        'echo "Error: Failed to attach to process" >&2\n'
        "echo \"Permission Denied: Try running again with elevated permissions by going 'sudo'\""
        " >&2\nexit 1\n",
    )
    assert tools.check_py_spy(fake) == (
        "reading another process not permitted (Permission Denied: Try running again with "
        "elevated permissions by going 'sudo')"
    )


def test_a_tool_that_hangs_is_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(tools, "_TIMEOUT_S", 0.5)
    fake = stand_in(tmp_path, "py-spy", "exec sleep 5\n")
    assert tools.check_py_spy(fake) == "reading another process failed (no answer within 0.5 s)"


# ------------------------------------------------------------------------------- real tools


def test_real_strace_attaches() -> None:
    strace = usable("strace")
    assert tools.check_strace(strace) is None


def test_real_perf_attaches() -> None:
    perf = usable("perf")
    assert tools.check_perf(perf) is None


def test_real_py_spy_records_a_python_child(tmp_path: Path) -> None:
    spy = usable("py-spy")
    out = tmp_path / "raw.folded"
    prog = (
        "import time\n"
        "def spin_here():\n"
        "    end = time.process_time() + 0.5\n"
        "    while time.process_time() < end:\n"
        "        pass\n"
        "spin_here()\n"
    )
    record = [spy, "record", "--rate", "200", "--format", "raw", "--output", str(out)]
    subprocess.run(
        [*record, "--", sys.executable, "-c", prog],
        check=True,
        capture_output=True,
        timeout=60,
    )
    from lanes.diagnose.flame import render, top_frames

    folded = out.read_text()
    leaf, samples = top_frames(folded, 1)[0]
    assert leaf.startswith("spin_here (<string>:"), top_frames(folded, 5)
    assert samples >= 20
    svg = render(out, tmp_path / "spin.svg", "py-spy").read_text()
    assert "spin_here (&lt;string&gt;:" in svg
