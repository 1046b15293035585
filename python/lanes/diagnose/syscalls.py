"""System calls of the target processes by name: calls, errors and time, over the window.

Tool rule: ``perf trace -s`` (the kernel's syscall tracepoints, summarised per thread; no
ptrace stop per call) when perf is permitted, else ``strace -c -f`` (the field reports' tool;
ptrace, slower per call), else skipped with the reason. Either runs attached to the process
tree's PIDs from :meth:`SyscallRecorder.start` to :meth:`SyscallRecorder.stop` (SIGINT: both
tools print their summary on it). Threads started after the attach are counted by strace
(``-f``) and not by perf trace.

The summary is summed over threads into ``{name: {"calls", "errors", "time_ms"}}``; the
session divides calls by the requests completed in the window to give calls **per request**,
the figure the field reports read (``futex``, ``epoll_wait``, ``recvfrom``/``sendto`` per
request).
"""

from __future__ import annotations

import re
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lanes.diagnose.tools import Tool

_STOP_S = 20.0
_PERF_ROW = re.compile(r"^\s+([a-z_0-9]+)\s+(\d+)\s+(\d+)\s+([0-9.]+)\s")
_STRACE_ROW = re.compile(r"^\s*[0-9.]+\s+[0-9.]+\s+\d+\s+(\d+)\s+(\d+)?\s*([a-z_0-9]+)\s*$")


def parse_perf_trace(text: str) -> dict[str, dict[str, float]]:
    """``perf trace -s`` output → per-syscall totals over every thread."""
    out: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        m = _PERF_ROW.match(line)
        if m is None:
            continue
        row = out.setdefault(m.group(1), {"calls": 0, "errors": 0, "time_ms": 0.0})
        row["calls"] += int(m.group(2))
        row["errors"] += int(m.group(3))
        row["time_ms"] = round(row["time_ms"] + float(m.group(4)), 3)
    return out


def parse_strace_c(text: str) -> dict[str, dict[str, float]]:
    """``strace -c`` summary (``% time seconds usecs/call calls errors syscall``) → totals."""
    out: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 5 or parts[-1] == "total" or not parts[0][0].isdigit():
            continue
        try:
            seconds = float(parts[1])
            calls = int(parts[3])
            errors = int(parts[4]) if len(parts) == 6 else 0
        except ValueError:
            continue
        out[parts[-1]] = {"calls": calls, "errors": errors, "time_ms": round(seconds * 1e3, 3)}
    return out


@dataclass
class SyscallRecorder:
    """Counts ``pids``' system calls into ``folder/syscalls.txt`` while it runs."""

    pids: list[int]
    folder: Path
    tools: dict[str, Tool]
    skipped: list[str] = field(default_factory=list)
    _proc: subprocess.Popen[bytes] | None = None
    _log: IO[bytes] | None = None
    _tool: str | None = None

    def start(self) -> None:
        perf, strace = self.tools["perf"], self.tools["strace"]
        out = self.folder / "syscalls.txt"
        pids = [str(p) for p in self.pids]
        if perf.path is not None:
            argv = [perf.path, "trace", "-s", "-p", ",".join(pids), "-o", str(out)]
            self._tool = "perf trace"
        elif strace.path is not None:
            argv = [strace.path, "-c", "-f", "-o", str(out)]
            for p in pids:
                argv += ["-p", p]
            self._tool = "strace -c"
        else:
            self.skipped.append(f"syscalls: skipped — {perf.why_not}; {strace.why_not}")
            return
        self._log = open(self.folder / "syscalls.log", "wb")  # noqa: SIM115 - closed in stop()
        self._proc = subprocess.Popen(
            argv, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )

    def stop(self) -> dict[str, Any] | None:
        """Stop the tracer and return ``{"tool", "calls": {name: {...}}}``, or None."""
        if self._proc is None:
            return None
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGINT)
        try:
            self._proc.wait(timeout=_STOP_S)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._log is not None:
            self._log.close()
        try:
            text = (self.folder / "syscalls.txt").read_text(errors="replace")
        except OSError:
            text = ""
        calls = parse_perf_trace(text) if self._tool == "perf trace" else parse_strace_c(text)
        if not calls:
            log = (self.folder / "syscalls.log").read_text(errors="replace").strip()
            why = (log.splitlines() or ["no summary written"])[-1]
            self.skipped.append(f"syscalls: {self._tool} recorded nothing — {why}")
            return None
        return {"tool": self._tool, "calls": calls}
