"""Fixtures of the prober's tests: a loopback listener and a targets-file writer. Helpers that
tests import are in ``probe_support.py``. Everything is on loopback and bounded."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A listening socket on 127.0.0.1 at a free port."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    yield s
    s.close()


@pytest.fixture
def write_targets(tmp_path: Path) -> Callable[..., Path]:
    """Writes ``targets.txt`` in a fresh folder from lines (through a rename); returns its path."""
    path = tmp_path / "targets.txt"

    def write(*lines: str) -> Path:
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(f"{line}\n" for line in lines))
        tmp.replace(path)
        return path

    return write
