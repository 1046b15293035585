"""The profilers the diagnosis uses, found and tried once per process.

Three tools, each from a package the project's setup installs (``make setup``):

- ``py-spy`` (PyPI, a dependency of lanes: in the virtual environment's ``bin`` beside
  :data:`sys.executable`, else on ``PATH``) reads the stacks of a running Python process;
- ``perf`` (Debian's ``linux-perf``) samples the stacks of native processes and traces system
  calls;
- ``strace`` (Debian's ``strace``) counts system calls where perf cannot.

Being installed is not enough: the kernel or a container may forbid what the tool does. So
:func:`discover` tries each the way the diagnosis uses it, on a child process it starts itself —
``perf record -g`` attached to a child (``-p``), ``strace -c -f`` of ``true`` and then attached
to a child (``-p``), ``py-spy dump`` of a child Python — and says, in one line, why a
tool is unusable: not installed, or not permitted and what refused it (for perf, with
``/proc/sys/kernel/perf_event_paranoid``'s value). A usable tool has a ``path``; an unusable one
has ``path`` None and a ``why_not``. Nothing here raises for a missing or refused tool.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

__all__ = ["NAMES", "Tool", "check_perf", "check_py_spy", "check_strace", "discover", "find"]

NAMES = ("py-spy", "perf", "strace")
"""The tools :func:`discover` reports on, in this order."""

_PACKAGES = {"py-spy": "PyPI's py-spy", "perf": "Debian's linux-perf", "strace": "Debian's strace"}
_TIMEOUT_S = 20.0
_PARANOID = Path("/proc/sys/kernel/perf_event_paranoid")


@dataclass(frozen=True)
class Tool:
    """One profiler: ``path`` to run when usable, else None and ``why_not`` (one line)."""

    name: str
    path: str | None
    why_not: str | None = None

    @property
    def skip_line(self) -> str | None:
        """``"NAME: skipped — REASON"`` for an unusable tool, None for a usable one."""
        if self.why_not is None:
            return None
        return f"{self.name}: skipped — {self.why_not.removeprefix(self.name + ': ')}"


_lock = threading.Lock()
_cache: tuple[int, dict[str, Tool]] | None = None


def discover(*, refresh: bool = False) -> dict[str, Tool]:
    """``{name: Tool}`` for py-spy, perf and strace; tried once per process (a fork tries again)
    unless ``refresh``. The three are tried at once; about a second and a half the first time."""
    global _cache
    with _lock:
        if refresh or _cache is None or _cache[0] != os.getpid():
            with ThreadPoolExecutor(len(NAMES), thread_name_prefix="lanes-tools") as pool:
                found = dict(zip(NAMES, pool.map(_probe, NAMES), strict=True))
            _cache = (os.getpid(), found)
        return dict(_cache[1])


def find(name: str) -> str | None:
    """Where ``name`` is installed: py-spy first beside the running interpreter (the venv)."""
    if name == "py-spy":
        beside = Path(sys.executable).parent / "py-spy"
        if beside.is_file() and os.access(beside, os.X_OK):
            return str(beside)
    return shutil.which(name)


def _probe(name: str) -> Tool:
    path = find(name)
    if path is None:
        return Tool(
            name, None, f"{name}: not installed ({_PACKAGES[name]}; make setup installs it)"
        )
    check = {"py-spy": check_py_spy, "perf": check_perf, "strace": check_strace}[name]
    try:
        why = check(path)
    except (OSError, subprocess.SubprocessError) as err:
        why = f"could not be tried ({_one_line(str(err))})"
    if why is None:
        return Tool(name, path, None)
    return Tool(name, None, f"{name}: {why}")


# ----------------------------------------------------------------------------- checks
#
# Each takes the executable's path and returns None when the tool works, else the reason
# (without the tool's name).


def check_perf(path: str) -> str | None:
    """``perf record -g`` attached (``-p``) to a child; when refused, ``perf record`` of
    ``true`` tells whether recording at all or only attaching is refused."""
    with _Child([sys.executable, "-c", _SLEEPER]) as child:
        argv = [path, "record", "-e", "cpu-clock", "-g", "-o", "/dev/null", "-p", str(child.pid)]
        attach = _run([*argv, "--", "sleep", "0.1"])
    if attach.returncode == 0:
        return None
    own = _run([path, "record", "-e", "cpu-clock", "-o", "/dev/null", "--", "true"])
    if own.returncode != 0:
        return f"{_refused(own, 'recording')} ({_paranoid()}: {_perf_error(own)})"
    return f"{_refused(attach, 'attach')} ({_paranoid()}: {_perf_error(attach)})"


def check_strace(path: str) -> str | None:
    """``strace -c -f`` of ``true``, then attached (``-p``) to a child."""
    done = _run([path, "-c", "-f", "-o", "/dev/null", "true"])
    if done.returncode != 0:
        return f"{_refused(done, 'tracing')} ({_strip(path, _last_line(done))})"
    with _Child([sys.executable, "-c", _SLEEPER]) as child:
        # strace -p follows the child until it ends: end it once strace has had time to attach.
        timer = threading.Timer(0.5, child.kill)
        timer.start()
        try:
            done = _run([path, "-o", "/dev/null", "-p", str(child.pid)])
        finally:
            timer.cancel()
    text = done.stderr.strip()
    if "attached" in text and "not permitted" not in text.lower():
        return None
    return f"{_refused(done, 'attach')} ({_strip(path, _last_line(done))})"


def check_py_spy(path: str) -> str | None:
    """``py-spy dump`` of a child Python."""
    with _Child([sys.executable, "-c", _SLEEPER]) as child:
        done = _run([path, "dump", "--pid", str(child.pid)])
    if done.returncode == 0 and "Thread" in done.stdout:
        return None
    return f"{_refused(done, 'reading another process')} ({_last_line(done)})"


_SLEEPER = "import sys, time\nprint('ready', flush=True)\ntime.sleep(30)\n"


class _Child:
    """A child process for the checks, up (it printed a line) on entry and killed on exit."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.pid = self.proc.pid

    def __enter__(self) -> _Child:
        assert self.proc.stdout is not None
        self.proc.stdout.readline()  # the interpreter is up: its stacks can be read
        return self

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()

    def __exit__(self, *exc: object) -> None:
        self.kill()
        self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, -1, "", f"no answer within {_TIMEOUT_S:g} s")


def _last_line(done: subprocess.CompletedProcess[str]) -> str:
    """The last non-empty line of stderr (else stdout), or the exit status."""
    for text in (done.stderr, done.stdout):
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if lines:
            return _one_line(lines[-1])
    return f"exit status {done.returncode}"


def _perf_error(done: subprocess.CompletedProcess[str]) -> str:
    """The first line of perf's ``Error:`` paragraph (its last lines list the paranoid levels)."""
    for line in done.stderr.splitlines():
        line = line.strip()
        if line and line != "Error:" and not line.startswith(("[ perf record", "WARNING")):
            return _one_line(line)
    return _last_line(done)


def _refused(done: subprocess.CompletedProcess[str], what: str) -> str:
    """``WHAT not permitted`` when the tool says so, else ``WHAT failed``."""
    text = (done.stderr + done.stdout).lower()
    words = ("not permitted", "permission denied", "no permission", "is limited", "eperm", "eacces")
    return f"{what} {'not permitted' if any(w in text for w in words) else 'failed'}"


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _strip(path: str, line: str) -> str:
    """strace's ``strace: attach: ptrace(...)`` without the program name."""
    for prefix in (f"{path}: ", f"{Path(path).name}: ", "attach: "):
        line = line.removeprefix(prefix)
    return line


def _paranoid() -> str:
    try:
        value = _PARANOID.read_text().strip()
    except OSError:
        return "perf_event_paranoid unreadable"
    return f"perf_event_paranoid={value}"
