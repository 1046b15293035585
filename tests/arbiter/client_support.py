"""A real ``lanes arbiter`` daemon for the client tests: started as a subprocess on a socket in
a temporary folder, stopped and restarted on the same path (to test reconnects and fallbacks).
Never a fake: the clients are tested against the daemon they will meet.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

START_S = 15.0
"""Longest wait for a daemon to accept connections."""


def wait_for(cond: Callable[[], bool], timeout_s: float = 5.0, what: str = "condition") -> None:
    """Polls ``cond`` until true; fails the test after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.005)


def _accepts(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(str(path))
        except OSError:
            return False
    return True


class Daemon:
    """``lanes arbiter --socket PATH --devices ... --capacity 1`` as a subprocess."""

    def __init__(self, path: Path, devices: str = "sim:2", *extra: str) -> None:
        self.path = path
        self.args = [
            sys.executable, "-m", "lanes", "arbiter", "--socket", str(path),
            "--devices", devices, "--capacity", "1", *extra,
        ]  # fmt: skip
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Daemon:
        self.proc = subprocess.Popen(self.args, stderr=subprocess.PIPE)
        deadline = time.monotonic() + START_S
        while not _accepts(self.path):
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise AssertionError(f"lanes arbiter exited {self.proc.returncode}: {err}")
            if time.monotonic() > deadline:
                raise AssertionError(f"lanes arbiter did not listen on {self.path}")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stops the daemon (SIGTERM, then SIGKILL) and waits for it."""
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        self.proc = None
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # whatever the daemon left, a restart binds afresh
