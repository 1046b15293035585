"""Giving freed memory back to the system once a flood of connections has closed.

glibc's malloc keeps what its threads freed: it shrinks an arena only from its top, so the
memory of 10,000 idle connections (~220 MiB, interleaved with longer-lived allocations) stays
resident after they close. ``malloc_trim(0)`` walks every arena and returns their free pages.
The native server decides when (``NativeServer.trim_due``: after a sharp fall in open
connections, rule in lanes-server's ``accept`` module); :func:`give_memory_back` does it,
from Python because the Rust workspace forbids ``unsafe``. Elsewhere than glibc it does nothing.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import time
from typing import Any

log = logging.getLogger("lanes.serving")


@functools.cache
def _malloc_trim() -> Any:
    """glibc's ``malloc_trim``, or None (another C library, not Linux)."""
    try:
        return ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):
        return None


def resident_bytes() -> int:
    """This process's resident memory (0 where /proc is not there)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def give_memory_back() -> bool:
    """``malloc_trim(0)`` (the GIL released meanwhile); False where there is none."""
    trim = _malloc_trim()
    if trim is None:
        return False
    before, t0 = resident_bytes(), time.perf_counter()
    trim(0)
    log.debug(
        "connections closed: freed memory given back, resident %.1f -> %.1f MiB in %.1f ms",
        before / 2**20,
        resident_bytes() / 2**20,
        (time.perf_counter() - t0) * 1e3,
    )
    return True
