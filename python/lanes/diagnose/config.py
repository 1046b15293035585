"""The ``[profile]`` settings: which runs are profiled and how (one typed config object).

The experiment parser (:mod:`lanes.lab.experiment`) validates the TOML table into a
:class:`ProfileConfig`; ``lanes bench --profile`` builds one from its flags.
"""

from __future__ import annotations

from dataclasses import dataclass

PROFILE_KEYS = (
    "levels",
    "repeats",
    "rate_hz",
    "interval_ms",
    "stacks",
    "syscalls",
    "native",
    "pid",
)
"""The keys the ``[profile]`` table accepts."""


@dataclass(frozen=True)
class ProfileConfig:
    """What to record while a profiled run measures.

    ``levels`` are offered values (rates, or concurrencies in closed loop) taken from the
    workload's levels; None profiles every level. ``repeats`` are 1-based; the repeats left out
    measure the same levels unprofiled, which is how the cost of profiling is shown.
    """

    levels: tuple[float, ...] | None = None
    repeats: tuple[int, ...] = (1,)
    rate_hz: int = 49
    """Stack samples per second and recorder (py-spy ``--rate``, perf ``-F``)."""
    interval_ms: int = 100
    """CPU, thread and context-switch sampling interval."""
    stacks: bool = True
    syscalls: bool = True
    syscall_time: bool = False
    """Time syscalls too (perf trace: ~10 µs per call, enough to saturate a busy loop); else
    count them (perf stat: ~1 µs per call)."""
    native: bool = False
    """py-spy ``--native``: C/C++/Rust frames beside Python ones (costs more per sample)."""
    pid: int | None = None
    """Profile this process (and its descendants) instead of the variant's own server."""

    def wants(self, offered: float, repeat: int, *, probe: bool = False) -> bool:
        """True when the run at ``offered`` in ``repeat`` is profiled (capacity probes never
        are: they would bias the search they decide)."""
        if probe or repeat not in self.repeats:
            return False
        return self.levels is None or any(
            abs(offered - v) <= 1e-9 * max(1.0, v) for v in self.levels
        )
