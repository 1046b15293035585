"""System calls of the target processes by name, counted (and timed on request) over the window.

Tool rule, cheapest first:

- ``perf stat`` counting the kernel's ``syscalls:sys_enter_*`` tracepoints of :data:`COUNTED`
  and the total per thread (the default): the kernel only increments counters, nothing is
  copied to user space, so a busy server loses about a microsecond per call (measured here:
  a getpid loop ran at 0.52 M/s counted, 1.0 M/s not). Counts only.
- ``perf trace -s`` when ``syscall_time`` is asked: counts and time per call, every event
  copied to user space and summarised there — about 10 µs per call and a user-space process
  competing for the cores (the same loop: 0.096 M/s), enough to saturate a busy server's event
  loop. The cost of profiling shows it.
- ``strace -c -f`` (the field reports' tool; ptrace, slowest) when perf is not permitted;
  else skipped with the reason.

Each runs attached to the process tree's PIDs from :meth:`SyscallRecorder.start` to
:meth:`SyscallRecorder.stop` (SIGINT: each tool prints its summary on it); perf attaches to
the threads alive at the start (and, by inheritance, the threads those start later),
strace follows new ones.

Attaching races with threads that exit: perf opens a counter per thread and event, and a
thread gone in between fails the whole tool ("No such process"; a thread-per-request server
failed about one attach in two here). Attach rule: perf is given the threads at least
:data:`_SETTLED_S` old (``-t``; a thread-per-request server's request threads are younger
and are counted through their parent's inherited counters once they exit), and a tool that
exits within :data:`_ATTACH_S` of its start failed to attach and is started again, at most
:data:`_ATTEMPTS` times; the block then says how many seconds it counted (``seconds``) so the
session divides by the requests of those seconds, not of the window.

The totals are summed over threads into ``{name: {"calls", "errors", "time_ms"}}`` (errors
and time None where the tool does not give them); the session divides calls by the requests
completed in the window to give calls **per request**, the figure the field reports read
(``futex``, ``epoll_wait``, ``recvfrom``/``sendto`` per request).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lanes.diagnose.tools import Tool

_STOP_S = 20.0
_ATTACH_S = 1.0
"""A tracer still running this long after its start has attached."""
_ATTEMPTS = 4
"""Starts of a tracer that keeps failing to attach before the part is given up."""
_SETTLED_S = 0.5
"""Threads younger than this are not attached to (they may exit while perf opens counters)."""
Calls = dict[str, dict[str, float | None]]
"""Per syscall name: ``calls``, ``errors`` and ``time_ms`` (None where the tool gives none)."""
_PERF_ROW = re.compile(r"^\s+([a-z_0-9]+)\s+(\d+)\s+(\d+)\s+([0-9.]+)\s")
_STRACE_ROW = re.compile(r"^\s*[0-9.]+\s+[0-9.]+\s+\d+\s+(\d+)\s+(\d+)?\s*([a-z_0-9]+)\s*$")


def parse_perf_trace(text: str) -> Calls:
    """``perf trace -s`` output → per-syscall totals over every thread."""
    out: Calls = {}
    for line in text.splitlines():
        m = _PERF_ROW.match(line)
        if m is None:
            continue
        row = out.setdefault(m.group(1), {"calls": 0, "errors": 0, "time_ms": 0.0})
        row["calls"] = (row["calls"] or 0) + int(m.group(2))
        row["errors"] = (row["errors"] or 0) + int(m.group(3))
        row["time_ms"] = round((row["time_ms"] or 0.0) + float(m.group(4)), 3)
    return out


def parse_perf_stat(text: str) -> Calls:
    """``perf stat -x,`` output over ``syscalls:sys_enter_*`` → per-syscall call counts."""
    out: Calls = {}
    for line in text.splitlines():
        parts = line.split(",")
        if len(parts) < 3 or not parts[2].startswith("syscalls:sys_enter_"):
            continue
        if not parts[0].isdigit() or parts[0] == "0":
            continue
        out[parts[2].removeprefix("syscalls:sys_enter_")] = {
            "calls": int(parts[0]),
            "errors": None,
            "time_ms": None,
        }
    total = next(
        (
            int(p[0])
            for p in (ln.split(",") for ln in text.splitlines())
            if len(p) > 2 and p[2] == "raw_syscalls:sys_enter" and p[0].isdigit()
        ),
        None,
    )
    counted = sum(int(r["calls"] or 0) for r in out.values())
    if total is not None and total > counted:
        out["other"] = {"calls": total - counted, "errors": None, "time_ms": None}
    return out


COUNTED = (
    "futex",
    "epoll_wait",
    "epoll_pwait",
    "epoll_ctl",
    "poll",
    "ppoll",
    "select",
    "pselect6",
    "read",
    "write",
    "readv",
    "writev",
    "pread64",
    "pwrite64",
    "recvfrom",
    "sendto",
    "recvmsg",
    "sendmsg",
    "accept4",
    "connect",
    "close",
    "openat",
    "newfstatat",
    "fstat",
    "lseek",
    "fsync",
    "fdatasync",
    "flock",
    "fcntl",
    "ioctl",
    "mmap",
    "munmap",
    "mprotect",
    "madvise",
    "brk",
    "clone",
    "clone3",
    "sched_yield",
    "nanosleep",
    "clock_nanosleep",
    "getpid",
    "gettid",
    "rt_sigprocmask",
    "getrandom",
    "wait4",
)
"""The syscalls perf stat counts: those the field reports read, I/O, memory, threads and
time. One counter per syscall and thread, so a server of hundreds of threads stays within the
open-file limit; everything else is the ``other`` row (``raw_syscalls:sys_enter`` minus these)."""


def syscall_events(perf: str) -> list[str]:
    """The ``syscalls:sys_enter_*`` tracepoints of :data:`COUNTED` that perf knows here, and
    the total ``raw_syscalls:sys_enter``."""
    done = subprocess.run(
        [perf, "list", "--raw-dump", "tracepoint"], capture_output=True, text=True, timeout=30
    )
    known = set(done.stdout.split())
    events = [f"syscalls:sys_enter_{n}" for n in COUNTED if f"syscalls:sys_enter_{n}" in known]
    return [*events, "raw_syscalls:sys_enter"] if "raw_syscalls:sys_enter" in known else events


def settled_threads(pids: list[int], min_age_s: float = _SETTLED_S) -> list[int]:
    """The threads of ``pids`` started at least ``min_age_s`` ago (``/proc/PID/task/TID/stat``
    field 22, in clock ticks since boot); every thread when none is that old, so a process
    that just started is still attached to."""
    tick = os.sysconf("SC_CLK_TCK")
    now = time.clock_gettime(time.CLOCK_BOOTTIME)
    every: list[int] = []
    settled: list[int] = []
    for pid in pids:
        try:
            tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            continue
        for tid in tids:
            try:
                stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
            except OSError:
                continue  # gone already
            every.append(tid)
            started = int(stat.rsplit(")", 1)[1].split()[19]) / tick
            if now - started >= min_age_s:
                settled.append(tid)
    return settled or every


def _raise_nofile() -> None:
    """In the tracer's child: the open-file limit up to the hard limit (perf stat opens one
    descriptor per counter and thread)."""
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def parse_strace_c(text: str) -> Calls:
    """``strace -c`` summary (``% time seconds usecs/call calls errors syscall``) → totals."""
    out: Calls = {}
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
    timed: bool = False
    """Count and time with perf trace (costly) instead of counting with perf stat."""
    skipped: list[str] = field(default_factory=list)
    _proc: subprocess.Popen[bytes] | None = None
    _log: IO[bytes] | None = None
    _tool: str | None = None
    _attempts: int = 0
    _attached_at: float = 0.0

    def start(self) -> None:
        perf, strace = self.tools["perf"], self.tools["strace"]
        out = self.folder / "syscalls.txt"
        pids = [str(p) for p in self.pids]
        events = syscall_events(perf.path) if perf.path is not None and not self.timed else []
        if perf.path is not None:  # perf attaches to settled threads (the attach rule)
            tids = ",".join(str(t) for t in settled_threads(self.pids)) or ",".join(pids)
        if perf.path is not None and self.timed:
            argv = [perf.path, "trace", "-s", "-t", tids, "-o", str(out)]
            self._tool = "perf trace"
        elif perf.path is not None and events:
            argv = [perf.path, "stat", "-x,", "-e", ",".join(events), "-t", tids]
            argv += ["-o", str(out)]
            self._tool = "perf stat"
        elif strace.path is not None:
            argv = [strace.path, "-c", "-f", "-o", str(out)]
            for p in pids:
                argv += ["-p", p]
            self._tool = "strace -c"
        else:
            self.skipped.append(f"syscalls: skipped — {perf.why_not}; {strace.why_not}")
            return
        self._attach(argv)

    def _attach(self, argv: list[str]) -> None:
        """Start the tracer until it stays up for :data:`_ATTACH_S` (the attach rule)."""
        for attempt in range(1, _ATTEMPTS + 1):
            self._attempts = attempt
            if self._log is not None:
                self._log.close()
            self._log = open(self.folder / "syscalls.log", "wb")  # noqa: SIM115 - closed in stop()
            self._attached_at = time.monotonic()
            self._proc = subprocess.Popen(
                argv,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_raise_nofile,  # setrlimit only: safe in the forked child
            )
            try:
                self._proc.wait(timeout=_ATTACH_S)
            except subprocess.TimeoutExpired:
                return  # attached
        # every start exited at once: stop() reports what the last one printed

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
        parse = {"perf trace": parse_perf_trace, "perf stat": parse_perf_stat}
        calls = parse.get(self._tool or "", parse_strace_c)(text)
        if not calls:
            log = (self.folder / "syscalls.log").read_text(errors="replace").strip()
            why = (log.splitlines() or ["no summary written"])[-1]
            tries = f" ({self._attempts} attempts)" if self._attempts > 1 else ""
            self.skipped.append(f"syscalls: {self._tool} recorded nothing{tries} — {why}")
            return None
        seconds = round(time.monotonic() - self._attached_at, 3)
        return {"tool": self._tool, "calls": calls, "attempts": self._attempts, "seconds": seconds}
