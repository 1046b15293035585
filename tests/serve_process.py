"""``lanes serve`` as a subprocess, for the tests that need the real command line (signals,
process memory, logs on stderr): start it on a model repository, wait for its start-up line
on stderr, and kill it at the end if it is still running.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

START_S = 30.0
"""Longest wait for the start-up line."""


def lanes_command() -> list[str]:
    """The installed ``lanes`` script beside this interpreter, else ``python -m lanes``."""
    script = Path(sys.executable).with_name("lanes")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "lanes"]


def model_toml(
    max_batch: int, *, max_enqueued_batches: int | None = None, cost_ms: float | None = None
) -> str:
    """The ``model.toml`` of a python-adapter model ``y = f(x)`` over FP32 ``[-1, 2]``."""
    batching = f"max_batch_size = {max_batch}\n"
    if max_enqueued_batches is not None:
        batching += f"max_enqueued_batches = {max_enqueued_batches}\n"
    cost = "" if cost_ms is None else f"[cost]\nfixed_ms = {cost_ms}\n\n"
    return (
        f'adapter = "python"\nfile = "model.py"\n\n[batching]\n{batching}\n{cost}'
        '[[inputs]]\nname = "x"\ndatatype = "FP32"\nshape = [-1, 2]\n\n'
        '[[outputs]]\nname = "y"\ndatatype = "FP32"\nshape = [-1, 2]\n'
    )


def write_model(repo: Path, name: str, source: str, toml: str) -> Path:
    """``repo/name/model.py`` and ``model.toml`` (a python-adapter model); returns ``repo``."""
    folder = repo / name
    folder.mkdir(parents=True)
    (folder / "model.py").write_text(source)
    (folder / "model.toml").write_text(toml)
    return repo


@dataclass
class ServeProcess:
    proc: subprocess.Popen[bytes]
    url: str
    log: Path

    @property
    def host(self) -> str:
        return self.url.split("//", 1)[1].rsplit(":", 1)[0]

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def rss_bytes(self) -> int:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
        assert match, status
        return int(match.group(1)) * 1024


def start(args: list[str], log: Path) -> ServeProcess:
    """``lanes serve ARGS`` (``LANES_SERVE_*`` cleared), stderr to ``log``; returns once it
    announced its URL, or fails the test with the log."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANES_SERVE_")}
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [*lanes_command(), "serve", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
        )
    end = time.monotonic() + START_S
    while not (match := re.search(r"lanes serve: (http://\S+) ", log.read_text())):
        if proc.poll() is not None or time.monotonic() > end:
            stop(proc)
            pytest.fail(f"lanes serve did not start (exit {proc.poll()}): {log.read_text()}")
        time.sleep(0.02)
    return ServeProcess(proc, match.group(1), log)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)


@contextmanager
def running(args: list[str], log: Path) -> Iterator[ServeProcess]:
    """:func:`start`, then :func:`stop` on the way out."""
    p = start(args, log)
    try:
        yield p
    finally:
        stop(p.proc)
