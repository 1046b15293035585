"""On-CPU and off-CPU stacks of the target processes, as folded stacks.

Folded stacks are one line per distinct stack, ``root;...;leaf COUNT``, the format of
Brendan Gregg's stackcollapse scripts, py-spy's ``raw`` output and inferno.

Rule for Python processes (py-spy): two recorders run side by side on the process tree
(``--subprocesses --threads``; ``--nonblocking`` unless native frames are asked for, which
need the process stopped per sample), both at ``rate_hz``: one samples only threads that are
running (py-spy's default: a thread the OS reports idle is left out), the other ``--idle``
samples every thread (``all.folded``). A stack's **off-CPU** count is its count with
``--idle`` minus its on-CPU count, at least 0 (``offcpu.folded``, for the flame graph): the
samples where that thread was blocked — in a lock, a file call, a sleep, waiting for the GIL,
or idle by design, e.g. an event loop in ``select``. The two recorders draw different
instants, so these are estimates with sampling noise of about the square root of the count;
the rules (:mod:`lanes.diagnose.findings`) read ``all.folded`` and ``oncpu.folded``, sum per
frame before subtracting, and test the difference against that noise.

Rule for native processes (perf): ``perf record -g -F rate_hz`` samples the CPU clock of the
processes (on-CPU only); ``perf script`` is collapsed with inferno. Off-CPU stacks of native
processes are not recorded (that needs scheduler tracepoints with call graphs, whose cost at
thousands of switches per second would distort the run); the recorder says so in one line.

The root of every Python stack is ``process PID:"cmdline"`` then ``thread (TID): name``, so
rules can follow one thread (the event loop's) through the window.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from lanes.diagnose.tools import Tool

_STOP_S = 20.0


def parse_folded(text: str) -> Counter[str]:
    """Folded text → {stack: count}; lines that do not end in a count are ignored."""
    out: Counter[str] = Counter()
    for line in text.splitlines():
        stack, _, count = line.rstrip().rpartition(" ")
        if stack and count.isdigit():
            out[stack] += int(count)
    return out


def format_folded(stacks: Counter[str]) -> str:
    return "".join(f"{s} {n}\n" for s, n in sorted(stacks.items()) if n > 0)


def is_python(pid: int) -> bool:
    """True when ``pid``'s executable looks like a CPython interpreter."""
    try:
        exe = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return False
    return exe.startswith("python") or exe.startswith("pypy")


@dataclass
class StackRecorder:
    """Records stacks of ``pid``'s tree into ``folder`` between :meth:`start` and :meth:`stop`."""

    pid: int
    folder: Path
    rate_hz: int
    native: bool
    tools: dict[str, Tool]
    skipped: list[str] = field(default_factory=list)
    _procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    _logs: dict[str, IO[bytes]] = field(default_factory=dict)
    _python: bool = False

    def start(self) -> None:
        self._python = is_python(self.pid)
        if self._python:
            spy = self.tools["py-spy"]
            if spy.path is None:
                self.skipped.append(f"stacks: skipped — {spy.why_not}")
                return
            base = [spy.path, "record", "--pid", str(self.pid), "--rate", str(self.rate_hz)]
            base += ["--format", "raw", "--subprocesses", "--threads"]
            # Without native frames py-spy reads the stacks without stopping the process
            # (--nonblocking): a stop per sample, two recorders at 49 Hz, costs a busy server
            # measurable throughput. Native unwinding needs the stop.
            base.append("--native" if self.native else "--nonblocking")
            self._spawn("oncpu", [*base, "--output", str(self.folder / "oncpu.raw")])
            self._spawn("all", [*base, "--idle", "--output", str(self.folder / "all.raw")])
        else:
            perf = self.tools["perf"]
            if perf.path is None:
                self.skipped.append(f"stacks: skipped — {perf.why_not}")
                return
            pids = ",".join(str(p) for p in _tree(self.pid))
            out = str(self.folder / "perf.data")
            argv = [perf.path, "record", "-g", "-F", str(self.rate_hz), "-p", pids, "-o", out]
            self._spawn("perf", argv)
            self.skipped.append(
                "offcpu stacks: not recorded for a native process (needs sched tracepoints "
                "with call graphs; on-CPU stacks only)"
            )

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.folder / f"{name}.log", "wb")  # noqa: SIM115 - closed in stop()
        self._logs[name] = log
        self._procs[name] = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )

    def stop(self) -> dict[str, object]:
        """Stop the recorders (SIGINT: each writes its output), fold, and return the ``stacks``
        block of profile.json (file names relative to the folder)."""
        for proc in self._procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        failed: list[str] = []
        for name, proc in self._procs.items():
            try:
                proc.wait(timeout=_STOP_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                failed.append(name)
            self._logs[name].close()
        for name in failed:
            self.skipped.append(f"stacks: {name} recorder did not stop within {_STOP_S:g} s")
        if not self._procs:
            return {"tool": None}
        return self._fold_python() if self._python else self._fold_perf()

    def _log_tail(self, name: str) -> str:
        try:
            lines = (self.folder / f"{name}.log").read_text(errors="replace").strip()
        except OSError:
            return "(no output)"
        return (lines.splitlines() or ["(no output)"])[-1]

    def _fold_python(self) -> dict[str, object]:
        try:
            oncpu = parse_folded((self.folder / "oncpu.raw").read_text(errors="replace"))
            every = parse_folded((self.folder / "all.raw").read_text(errors="replace"))
        except OSError:
            self.skipped.append(f"stacks: py-spy wrote no samples — {self._log_tail('oncpu')}")
            return {"tool": "py-spy"}
        offcpu = Counter({s: n - oncpu.get(s, 0) for s, n in every.items()})
        (self.folder / "oncpu.folded").write_text(format_folded(oncpu))
        (self.folder / "offcpu.folded").write_text(format_folded(offcpu))
        (self.folder / "all.folded").write_text(format_folded(every))
        for raw in ("oncpu.raw", "all.raw"):
            (self.folder / raw).unlink(missing_ok=True)
        return {
            "tool": "py-spy",
            "rate_hz": self.rate_hz,
            "oncpu": "oncpu.folded",
            "offcpu": "offcpu.folded",
            "all": "all.folded",
            "samples_oncpu": sum(oncpu.values()),
            "samples_all": sum(every.values()),
        }

    def _fold_perf(self) -> dict[str, object]:
        from lanes import _core

        perf = self.tools["perf"]
        assert perf.path is not None
        data = self.folder / "perf.data"
        done = subprocess.run(
            [perf.path, "script", "-i", str(data)], capture_output=True, timeout=120, check=False
        )
        if done.returncode != 0 or not done.stdout:
            tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
            self.skipped.append(f"stacks: perf script failed — {tail[0]}")
            return {"tool": "perf"}
        folded = _core.collapse_perf(done.stdout.decode(errors="replace"))
        (self.folder / "oncpu.folded").write_text(folded)
        data.unlink(missing_ok=True)
        return {
            "tool": "perf",
            "rate_hz": self.rate_hz,
            "oncpu": "oncpu.folded",
            "offcpu": None,
            "samples_oncpu": sum(parse_folded(folded).values()),
        }


def _tree(pid: int) -> list[int]:
    from lanes.diagnose.sampler import process_tree

    try:
        return [p.pid for p in process_tree(pid)]
    except Exception:
        return [pid]
