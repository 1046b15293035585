"""Helpers of the prober's tests (imported by name: this folder is on ``sys.path``)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest


def cap_net_raw() -> bool:
    """Whether this process holds CAP_NET_RAW (bit 13 of CapEff in /proc/self/status)."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> 13 & 1)
    return False


needs_raw = pytest.mark.skipif(
    not cap_net_raw(),
    reason="syn mode needs CAP_NET_RAW (raw and packet sockets), which this process lacks",
)
MODES = [pytest.param("syn", marks=needs_raw), "connect"]
"""Both modes, syn skipped with its reason where it cannot run."""


def port_of(s: socket.socket) -> int:
    """The port a socket is bound to."""
    return int(s.getsockname()[1])
