"""The default policy of ``lanes serve`` (``--policy auto``), chosen by the devices' kind.

The rule, in :func:`resolve_policy`, applied once the devices are resolved:

- **GPU-like CPU devices** — every device a CPU executor with one intra-op thread (what
  ``--devices auto`` and ``gpu-like`` give on a host without GPUs, and ``cpu:N --cpu-threads
  1``): :data:`CPU_POLICY`, ``fair`` with a fast lane two slots wide that opens beside any job,
  and every model allowed at least one batch in flight per device (its ``num_batch_threads``
  raised to the device count, as ``independent`` runs one worker per model per core). On such a
  host the cores time-slice whatever overlaps on them, and this setting is what both the
  simulator and the CPU lab found keeps every model's p99 within 10 % of each model running on
  its own, at a higher steady capacity than ``sjf`` (docs/results/sim.md, "Thirty rotated
  repeats").
- **Everything else** — CUDA GPUs, simulated GPUs (``sim:N``), CPU executors with several
  intra-op threads each (``cpu``, ``cpu:N`` by default): :data:`GPU_POLICY`, ``sjf``, with each
  model's own ``num_batch_threads``. On a GPU the same fast lane costs about half of ``sjf``'s
  steady capacity in the simulator (docs/policies.md), and a multi-threaded CPU executor was not
  measured.

Under ``--arbiter`` the daemon orders every batch, so ``auto`` is :data:`GPU_POLICY` there, as
before this rule (the daemon's own default is ``sjf`` too). A policy named explicitly
(``--policy sjf``) is used as given, with each model's own settings.
What ``auto`` became is said in one log line at start (:attr:`ResolvedPolicy.note`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lanes.models.base import Device

AUTO = "auto"
"""The default ``--policy``: chosen by the devices' kind, as the module docs say."""
CPU_POLICY = "fair:fast=25,hold=6,burst=100,width=2,beside=any"
"""The policy ``auto`` picks on GPU-like CPU devices."""
GPU_POLICY = "sjf"
"""The policy ``auto`` picks on every other kind of device."""


@dataclass(frozen=True)
class ResolvedPolicy:
    """What a ``--policy`` value means on some devices.

    - ``policy``: the policy the scheduler runs.
    - ``batch_threads``: the least ``num_batch_threads`` every model gets (1: each model's own).
    - ``note``: the line said at start when ``auto`` chose; None for a policy named explicitly.
    """

    policy: str
    batch_threads: int = 1
    note: str | None = None

    def num_batch_threads(self, own: int) -> int:
        """A model's batches in flight at once, given its own ``num_batch_threads``."""
        return max(own, self.batch_threads)


def gpu_like_cpu(devices: Sequence[Device]) -> bool:
    """Whether every device is a CPU executor with one intra-op thread."""
    return bool(devices) and all(d.kind == "cpu" and d.threads == 1 for d in devices)


def resolve_policy(
    policy: str, devices: Sequence[Device], *, arbitrated: bool = False
) -> ResolvedPolicy:
    """``policy`` on ``devices``: itself unless it is :data:`AUTO`, then the module docs' rule;
    ``arbitrated``: a ``lanes arbiter`` daemon orders the batches."""
    if policy != AUTO:
        return ResolvedPolicy(policy)
    if arbitrated:
        return ResolvedPolicy(
            GPU_POLICY, note=f"policy auto: the arbiter orders the batches, so {GPU_POLICY} here"
        )
    if gpu_like_cpu(devices):
        n = len(devices)
        return ResolvedPolicy(
            CPU_POLICY,
            batch_threads=n,
            note=f"policy auto: GPU-like CPU devices, so {CPU_POLICY} with up to {n} "
            f"batch{'es' if n != 1 else ''} of each model in flight (one per device)",
        )
    if any(d.kind == "cpu" for d in devices):
        why = "CPU executors with several intra-op threads (not GPU-like)"
    else:
        why = "simulated GPUs" if devices[0].kind == "sim" else "GPUs"
    return ResolvedPolicy(GPU_POLICY, note=f"policy auto: {why}, so {GPU_POLICY}")
