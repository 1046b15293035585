"""Devices of ``lanes serve``: parsing ``--devices`` and resolving ``auto``.

Spec grammar (``--devices``), comma-separated, one kind per spec:

- ``cpu`` — one CPU executor; ``cpu:N`` — N CPU executors. Each runtime on a CPU executor gets
  ``threads`` intra-op threads (default: the cores divided among the executors, at least 1).
- ``cuda:0,cuda:1`` — those CUDA devices (by index); refused when CUDA is not present.
- ``sim:N`` — N simulated GPUs. A simulated GPU holds each batch for the model's modelled run time
  (its cost curve), stretched by the simulator's contention model when batches overlap on it:
  with k batches on one device each progresses at 1/k of its solo speed (processor sharing, as
  ``lanes sim`` with ``eta = 1``). Outputs are computed on the CPU meanwhile; the slot is held
  until both the modelled time and the computation are over. Simulated devices are labelled
  ``sim:N`` in every listing, metric and result.
- ``auto`` — devices that behave like GPUs (design.md §4.1: overlapping work waits, it does not
  go faster). The rule, in :func:`resolve_devices`:

  1. every CUDA device (``cuda:0,...``) when the models' runtime can use a GPU that is present:
     ONNX Runtime's CUDA provider (the default), or PyTorch's CUDA for the demo zoo's ``torch``
     backend (:func:`cuda_counter`);
  2. else, under ``--policy independent`` without an arbiter (the status quo: each model its own
     workers), ``cpu`` — one executor whose runtimes get the cores as intra-op threads, as before;
  3. else ``cpu:N`` with N the cores this process may run on (its CPU affinity; at most 64), one
     intra-op thread each unless ``--cpu-threads`` says otherwise: one executor per core, so the
     scheduler places whole jobs on cores instead of runtimes dividing the cores among themselves.

  Whatever ``auto`` became is said in one log line at start (:attr:`Resolved.note`).
- ``gpu-like`` — ``auto`` without its status-quo exception (rule 2): every CUDA device, else one
  CPU executor per core, under every policy. ``--policy independent --devices gpu-like`` is each
  model's own single-threaded workers on every core (one runtime per model per core, the cores
  time-sliced among them by the OS), which is what ``lanes sim`` models as ``independent`` and
  what the field's "every model launching on its own" is on a GPU host; ``lanes demo`` runs it
  beside the status quo. Said at start like ``auto``.

Each device's executor threads (as many as jobs it may run at once) and the processor sharing
of simulated devices live in the native data plane (lanes-server's ``device`` and ``runner``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from lanes.errors import LanesError
from lanes.models.base import Device

BAD_DEVICES = "bad_devices"
"""A ``--devices`` value that is malformed or names devices this host does not have."""

ALLOWED = "auto, gpu-like, cpu, cpu:N, cuda:I[,cuda:J...], sim:N (N from 1 to 64)"
AUTO = "auto"
GPU_LIKE = "gpu-like"
"""``auto`` under every policy: see the module docs."""
AUTOMATIC = (AUTO, GPU_LIKE)
"""The ``--devices`` values resolved on the host rather than naming devices."""
MAX_DEVICES = 64


def cuda_count() -> int:
    """CUDA devices usable through ONNX Runtime: 0 without the CUDA provider or a GPU."""
    try:
        import onnxruntime as ort  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - onnxruntime is a dependency
        return 0
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        return 0
    return gpu_count()


def torch_cuda_count() -> int:
    """CUDA devices usable through PyTorch (the demo zoo's ``torch`` backend, for hosts whose
    onnxruntime has no CUDA provider): 0 without a GPU or without torch. ``nvidia-smi`` is asked
    first, so a host without NVIDIA's driver never imports torch."""
    if gpu_count() == 0:
        return 0
    try:
        import torch  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return 0
    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


def cuda_counter(backend: str) -> Callable[[], int]:
    """The counter of CUDA devices for the models' runtime: :func:`torch_cuda_count` for the
    ``torch`` zoo backend, :func:`cuda_count` (ONNX Runtime) otherwise."""
    return torch_cuda_count if backend == "torch" else cuda_count


def gpu_count() -> int:
    """NVIDIA GPUs on this host, as ``nvidia-smi -L`` lists them (0 without the driver); for
    ``lanes arbiter``, which grants devices to other processes and runs nothing itself."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return 0
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def usable_cores() -> int:
    """Cores this process may run on: its CPU affinity (``os.cpu_count()`` where unknown)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # pragma: no cover - no affinity outside Linux
        return os.cpu_count() or 1


def _count(spec: str, value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_DEVICES:
        raise LanesError(
            BAD_DEVICES, f"--devices '{spec}': count must be 1..64; allowed: {ALLOWED}"
        )
    return n


@dataclass(frozen=True)
class Resolved:
    """The devices a ``--devices`` value names and, for ``auto``, the line saying what it meant."""

    devices: list[Device]
    note: str | None = None


def resolve_devices(
    text: str,
    *,
    threads: int | None = None,
    independent: bool = False,
    cuda_available: Callable[[], int] | None = None,
    cores: Callable[[], int] | None = None,
) -> Resolved:
    """``text`` as devices, ``auto`` and ``gpu-like`` resolved by the rule in the module docs.

    ``independent``: each model runs its own workers (``--policy independent`` with no arbiter);
    only ``auto`` heeds it. ``cuda_available`` counts CUDA devices (default :func:`cuda_count`);
    ``cores`` counts the cores ``auto`` spreads over (default :func:`usable_cores`).
    """
    count_cuda = cuda_count if cuda_available is None else cuda_available
    spec = text.strip()
    if spec not in AUTOMATIC:
        return Resolved(_parse(spec, threads, count_cuda))
    n = count_cuda()
    if n:
        devices = [Device("cuda", i, 1) for i in range(n)]
        names = ", ".join(d.name for d in devices)
        return Resolved(devices, f"devices {spec}: {_plural(n, 'CUDA GPU')} ({names})")
    if independent and spec == AUTO:
        devices = _parse("cpu", threads, count_cuda)
        return Resolved(
            devices,
            f"devices auto: no CUDA GPU; policy independent: one CPU executor with "
            f"{_plural(devices[0].threads, 'intra-op thread')}, each model its own workers",
        )
    have = (usable_cores if cores is None else cores)()
    n = min(have, MAX_DEVICES)
    per = 1 if threads is None else threads
    devices = _parse(f"cpu:{n}", per, count_cuda)
    capped = f" of {have}, at most {MAX_DEVICES}" if have > n else ""
    given = " (--cpu-threads)" if threads is not None else ""
    return Resolved(
        devices,
        f"devices {spec}: no CUDA GPU; {_plural(n, 'CPU executor')} (one per core{capped}), "
        f"{_plural(per, 'intra-op thread')} each{given} — GPU-like: overlapping work waits",
    )


def parse_devices(
    text: str,
    *,
    threads: int | None = None,
    cuda_available: Callable[[], int] | None = None,
) -> list[Device]:
    """The devices a ``--devices`` value names (see the module docs for the grammar); for
    checking a value, and for ``lanes arbiter`` (which schedules, so ``auto`` is GPU-like)."""
    return resolve_devices(text, threads=threads, cuda_available=cuda_available).devices


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _parse(text: str, threads: int | None, cuda_available: Callable[[], int]) -> list[Device]:
    """An explicit spec (not ``auto``) as devices."""
    cores = os.cpu_count() or 1
    if not text:
        raise LanesError(BAD_DEVICES, f"--devices is empty; allowed: {ALLOWED}")
    specs = [s.strip() for s in text.split(",")]
    kinds = {s.split(":", 1)[0] for s in specs}
    if len(kinds) > 1:
        raise LanesError(
            BAD_DEVICES, f"--devices '{text}': mixes kinds {sorted(kinds)}; use one kind"
        )
    kind = kinds.pop()
    if kind in AUTOMATIC:
        raise LanesError(
            BAD_DEVICES, f"--devices '{text}': '{kind}' stands alone (no count, no list); {ALLOWED}"
        )
    if kind == "cpu":
        if len(specs) != 1:
            raise LanesError(BAD_DEVICES, f"--devices '{text}': use cpu or cpu:N; {ALLOWED}")
        n = 1 if specs[0] == "cpu" else _count(text, specs[0].split(":", 1)[1])
        per = threads if threads is not None else max(1, cores // n)
        if per < 1:
            raise LanesError(BAD_DEVICES, f"--cpu-threads {per}: must be >= 1")
        return [Device("cpu", i, per) for i in range(n)]
    if kind == "sim":
        if len(specs) != 1 or ":" not in specs[0]:
            raise LanesError(BAD_DEVICES, f"--devices '{text}': use sim:N; allowed: {ALLOWED}")
        return [Device("sim", i, 1) for i in range(_count(text, specs[0].split(":", 1)[1]))]
    if kind == "cuda":
        indices: list[int] = []
        for s in specs:
            _, _, idx = s.partition(":")
            if not idx.isdigit():
                raise LanesError(BAD_DEVICES, f"--devices '{s}': use cuda:I; allowed: {ALLOWED}")
            indices.append(int(idx))
        if len(set(indices)) != len(indices):
            raise LanesError(BAD_DEVICES, f"--devices '{text}': a device is listed twice")
        have = cuda_available()
        usable = {
            cuda_count: "usable by ONNX Runtime",
            torch_cuda_count: "usable by PyTorch",
        }.get(cuda_available, "listed by nvidia-smi -L")
        missing = [i for i in indices if i >= have]
        if missing:
            raise LanesError(
                BAD_DEVICES,
                f"--devices '{text}': cuda:{missing[0]} is not present "
                f"(this host has {have} CUDA device(s) {usable}); allowed: {ALLOWED}",
            )
        return [Device("cuda", i, 1) for i in indices]
    raise LanesError(BAD_DEVICES, f"--devices '{text}': unknown kind '{kind}'; allowed: {ALLOWED}")
