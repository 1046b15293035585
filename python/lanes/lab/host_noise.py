"""Host noise: how much CPU the rest of the host took while a run measured.

A lab on a shared host measures its neighbours too: another tenant's build on one of two cores,
or a hypervisor lending the cores to other guests (steal), lengthens a run's tail with nothing
in the server to show for it. The runner takes a :class:`HostSample` at the measurement
window's start and end (beside :class:`lanes.lab.scrape.CpuSample`), and :func:`noise` splits
the host's CPU over the window between three owners:

- **the server**: the server process and every process under it (an nginx's workers, a
  Triton's backends), each process's own time plus its reaped children's, so that a child
  ending inside the window moves its time to its parent instead of losing it;
- **the lab**: this process (the runner) and every process under it that is not the server's,
  that is the load generators;
- **other**: what the host's cores spent in user, nice, system, interrupt and soft-interrupt
  time beyond those two (``other_cpu_s``, at least 0). The interrupt time is counted because
  the processes' own clocks take in part of it (without it a quiet run's processes used more
  than the host did); the floor at 0 absorbs the few per cent the two clocks differ by.

``steal_cpu_s`` is the time the hypervisor ran other guests on this guest's cores (0 on bare
metal). A run whose ``other_cpu_s + steal_cpu_s`` over its window reaches
:data:`DISTURBED_CORES` cores is *disturbed* (:func:`disturbed`): its figures are partly the
host's, and the lab names it (lanes.lab.aggregate's ``disturbed``, the report). Nothing is left
out for it, since the share of the tail it made cannot be told from the run.

Everything is read with psutil; where it cannot be read (not Linux, a process gone) the figure is
None, never a guess. With a ``[cluster]`` the generators run in Ray's workers, this host's among
them, which are not under the runner: no ``lab_cpu_s`` and no ``other`` are taken then.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import psutil

DISTURBED_CORES = 0.1
"""Other processes' CPU plus steal, in cores over the window, at which a run is disturbed: about
3 times the most a quiet run of this project's 2-core host showed (0.036 cores; the median of
179 quiet runs was 0), and a tenth of what one neighbour burning a core shows."""


@dataclass(frozen=True)
class HostSample:
    """Cumulative CPU seconds at one instant."""

    busy_s: float
    """The host's user, nice, system, interrupt and soft-interrupt seconds over all cores
    (guest time is in user)."""
    steal_s: float
    """The host's steal seconds over all cores."""
    server_s: float | None
    """The server's process tree, None when there is no server process of ours."""
    lab_s: float | None
    """This process and its descendants outside the server's tree."""


def _cpu(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return float(t.user + t.system + t.children_user + t.children_system)


def _tree(root: psutil.Process) -> list[psutil.Process]:
    try:
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return [root]


def _sum(procs: list[psutil.Process]) -> float:
    total = 0.0
    for p in procs:
        try:
            total += _cpu(p)
        except psutil.Error:
            continue  # ended between the listing and the read: its parent has its time
    return total


def host_sample(server_pid: int | None, lab: bool = True) -> HostSample | None:
    """Read the counters now; None where the host's CPU times cannot be read. ``lab`` False:
    the lab's load does not all run under this process (a Ray cluster's generators run in its
    workers on this host too), so no lab figure is taken and no ``other`` follows from it."""
    try:
        t = psutil.cpu_times()
    except (psutil.Error, OSError):
        return None
    parts = ("user", "nice", "system", "irq", "softirq")
    busy = float(sum(getattr(t, k, 0.0) for k in parts))
    steal = float(getattr(t, "steal", 0.0))
    server: list[psutil.Process] = []
    if server_pid is not None:
        try:
            server = _tree(psutil.Process(server_pid))
        except psutil.Error:
            server = []
    server_s = _sum(server) if server else None
    if not lab:
        return HostSample(busy, steal, server_s, None)
    own = {p.pid for p in server}
    try:
        ours = [p for p in _tree(psutil.Process(os.getpid())) if p.pid not in own]
    except psutil.Error:
        return HostSample(busy, steal, server_s, None)
    return HostSample(busy_s=busy, steal_s=steal, server_s=server_s, lab_s=_sum(ours))


def noise(before: Any, after: Any, window_s: float) -> dict[str, float | None]:
    """The run file's ``server`` fields from two samples (docs/lab.md): ``server_tree_cpu_s``,
    ``lab_cpu_s``, ``other_cpu_s``, ``steal_cpu_s`` (CPU seconds over the window) and
    ``other_cores`` (other plus steal over ``window_s``); each None where a sample lacks it,
    and the last two when the server is not a process of ours (a ``url`` variant's server may
    run on this host, and its CPU cannot be told from a neighbour's)."""
    out: dict[str, float | None] = dict.fromkeys(
        ("server_tree_cpu_s", "lab_cpu_s", "other_cpu_s", "steal_cpu_s", "other_cores")
    )
    if not (isinstance(before, HostSample) and isinstance(after, HostSample)):
        return out
    steal = out["steal_cpu_s"] = max(0.0, after.steal_s - before.steal_s)
    if after.server_s is not None and before.server_s is not None:
        out["server_tree_cpu_s"] = max(0.0, after.server_s - before.server_s)
    if after.lab_s is not None and before.lab_s is not None:
        out["lab_cpu_s"] = max(0.0, after.lab_s - before.lab_s)
    server, lab = out["server_tree_cpu_s"], out["lab_cpu_s"]
    if server is None or lab is None:
        return out
    other = out["other_cpu_s"] = max(0.0, after.busy_s - before.busy_s - lab - server)
    if window_s > 0:
        out["other_cores"] = (other + steal) / window_s
    return out


def disturbed(server: Mapping[str, Any] | None) -> float | None:
    """A run's ``other_cores`` when it reaches :data:`DISTURBED_CORES`, else None."""
    cores = (server or {}).get("other_cores")
    if isinstance(cores, (int, float)) and not isinstance(cores, bool):
        return float(cores) if cores >= DISTURBED_CORES else None
    return None
