"""Giving freed memory back to the system: once a flood of connections has closed, and when
resident memory creeps under steady load.

glibc's malloc keeps what its threads freed: it shrinks an arena only from its top, so the
memory of 10,000 idle connections (~220 MiB, interleaved with longer-lived allocations) stays
resident after they close, and under a long overload the arenas' free pages creep upwards
(0.2 MiB a minute at 4,430 req/s, all of it given back by a trim: docs/results/reliability.md).
``malloc_trim(0)`` walks every arena and returns their free pages. Two rules decide when:

- **A fall in connections**: the native server's ``NativeServer.trim_due`` (after a sharp fall
  in open connections, rule in lanes-server's ``accept`` module) — trim at once.
- **Creep** (:class:`Creep`): every ``every_s`` (60 s) resident memory is read; a trim is due
  when it is at least ``growth_bytes`` (1 MiB) above the level the last trim left (the first
  check trims to find that level). So resident memory stays within about ``growth_bytes`` plus
  a minute's creep of what the process really holds, and a process that does not creep is
  never trimmed after its first minute; a level after trim that drifts upward is live memory.

:func:`give_memory_back` trims, from Python because the Rust workspace forbids ``unsafe``, with
the GIL released; elsewhere than glibc it does nothing.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import time
from dataclasses import dataclass, field
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


def give_memory_back(why: str = "connections closed") -> bool:
    """``malloc_trim(0)`` (the GIL released meanwhile); False where there is none."""
    trim = _malloc_trim()
    if trim is None:
        return False
    before, t0 = resident_bytes(), time.perf_counter()
    trim(0)
    log.debug(
        "%s: freed memory given back, resident %.1f -> %.1f MiB in %.1f ms",
        why,
        before / 2**20,
        resident_bytes() / 2**20,
        (time.perf_counter() - t0) * 1e3,
    )
    return True


@dataclass
class Creep:
    """The creep rule of the module overview, on an injected clock: :meth:`due` at each poll,
    :meth:`trimmed` after each trim (whatever its cause) with the resident bytes it left."""

    every_s: float = 60.0
    growth_bytes: int = 1 << 20
    start: float = 0.0
    _next: float = field(init=False)
    _floor: int | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self._next = self.start + self.every_s

    def due(self, now: float, resident: int | None = None) -> bool:
        """Whether a trim is due at ``now``. ``resident`` (bytes) is read only when a check
        falls due (None: :func:`resident_bytes`)."""
        if now < self._next:
            return False
        self._next = now + self.every_s
        rss = resident_bytes() if resident is None else resident
        return self._floor is None or rss >= self._floor + self.growth_bytes

    def trimmed(self, resident: int | None = None) -> None:
        """A trim happened and left ``resident`` bytes (None: read now)."""
        self._floor = resident_bytes() if resident is None else resident
