"""Warm-up: every model runs a few batches on every device before the server reports ready.

Rule (design.md §4.10): for each served model and each device it has a replica on, and for each
batch size of :func:`batch_sizes` (1, the powers of two below ``max_batch_size``, and
``max_batch_size``; just 1 when batching is off), run ``batches`` batches of that many copies of
the model's :meth:`~lanes.models.base.Model.sample` through the replica's ``collate`` →
``predict`` → ``split``. Devices warm in parallel; on one device, models and sizes run one after
another, as serving runs one batch per device. A server's warm-up runs this on **each executor
thread of the device** (``on_executors``: NativeServer.on_executors), where its batches will run,
so that what an engine keeps per thread — PyTorch's and ONNX Runtime's CUDA library handles — is
made before ready, not on the first request; without ``on_executors`` (a caller with no server),
on one thread per device. Warm-up batches do not count in the model's statistics.

The measured time of the last (warm) batch of each size seeds the scheduler's cost estimate
(``NativeServer.observe``) on real devices; not on simulated ones, whose run time is the model's
modelled cost, not the CPU time measured here.

A model that cannot make a sample (``LanesError("no_sample")``: a ``BYTES`` input and no
``sample`` override) is not warmed, with a warning. A sample or a batch that raises otherwise fails
start-up with ``LanesError("warmup_failed", ...)`` naming
the model, the device and the batch size.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from lanes.errors import LanesError
from lanes.models.base import NO_SAMPLE, Device, Model

WARMUP_FAILED = "warmup_failed"
"""A model whose warm-up sample or warm-up batch raised: the server does not start."""

log = logging.getLogger("lanes.serve")


def batch_sizes(max_batch_size: int) -> list[int]:
    """The sizes warmed: 1, the powers of two below ``max_batch_size``, and ``max_batch_size``
    (``[1]`` when batching is off, ``max_batch_size == 0``)."""
    sizes = [1]
    while sizes[-1] * 2 < max_batch_size:
        sizes.append(sizes[-1] * 2)
    if max_batch_size > 1:
        sizes.append(max_batch_size)
    return sizes


@dataclass(frozen=True)
class Warmed:
    """What warm-up did for one model on one device: batch size → time of its last batch."""

    model: str
    device: str
    batches: int
    seconds: float
    last_ns: dict[int, int]


def _run(
    replica: Model, name: str, device_name: str, item: Any, sizes: Sequence[int], batches: int
) -> Warmed:
    """Warm one replica; raise ``warmup_failed`` naming what broke."""
    last: dict[int, int] = {}
    started = time.perf_counter()
    for size in sizes:
        for _ in range(batches):
            t0 = time.perf_counter_ns()
            try:
                outputs = replica.predict(replica.collate([item] * size))
                replica.split(outputs, [1] * size)
            except Exception as err:
                raise LanesError(
                    WARMUP_FAILED,
                    f"model '{name}' failed warm-up on {device_name} (batch of {size}): "
                    f"{type(err).__name__}: {err}",
                ) from err
            last[size] = time.perf_counter_ns() - t0
    return Warmed(name, device_name, batches * len(sizes), time.perf_counter() - started, last)


def _run_native(
    warm: Callable[[int, int, int], int | None],
    model: int,
    device: int,
    name: str,
    device_name: str,
    sizes: Sequence[int],
    batches: int,
) -> Warmed | None:
    """Warm a native model on one device (None: it has no replica there)."""
    last: dict[int, int] = {}
    started = time.perf_counter()
    for size in sizes:
        for _ in range(batches):
            try:
                ns = warm(model, device, size)
            except LanesError as err:
                if err.message.startswith("no replica on device"):
                    return None
                raise LanesError(
                    WARMUP_FAILED,
                    f"model '{name}' failed warm-up on {device_name} (batch of {size}): "
                    f"{err.message}",
                ) from err
            if ns is None:
                return None
            last[size] = ns
    return Warmed(name, device_name, batches * len(sizes), time.perf_counter() - started, last)


def _fastest(runs: Sequence[Sequence[Warmed]]) -> list[Warmed]:
    """One device's warm-up done on each of its executor threads, as one list: per model, the
    first thread's record with every size's least last time over the threads."""
    if not runs:
        return []
    merged = []
    for i, first in enumerate(runs[0]):
        last = {
            size: min(run[i].last_ns.get(size, ns) for run in runs)
            for size, ns in first.last_ns.items()
        }
        merged.append(Warmed(first.model, first.device, first.batches, first.seconds, last))
    return merged


def warm_up(
    models: Sequence[Model],
    replicas: Sequence[Sequence[Model | None]],
    devices: Sequence[Device],
    batches: int,
    native: Collection[int] = (),
    warm: Callable[[int, int, int], int | None] | None = None,
    on_executors: Callable[[int, Callable[[], list[Warmed]]], list[list[Warmed]]] | None = None,
) -> list[Warmed]:
    """Warm every model on every device (see the module docstring); returns what ran.

    ``replicas[m][d]`` is model ``m``'s replica on device ``d`` (None: none there). The models
    in ``native`` run in the native data plane, with no replica: ``warm(m, d, rows)`` runs one
    batch of zeros there, on the calling thread, and returns its nanoseconds.
    ``on_executors(d, f)`` runs ``f`` on each executor thread of device ``d`` and returns the
    results (a server's); every device's warm-up runs that way when given."""
    if batches <= 0:
        return []
    samples: dict[int, Any] = {}
    for m, model in enumerate(models):
        if m in native:
            continue
        try:
            samples[m] = model.sample()
        except LanesError as err:
            if err.code == NO_SAMPLE:
                log.warning("not warmed up: %s", err.message, extra={"model": model.name})
                continue
            raise LanesError(WARMUP_FAILED, f"warm-up: {err.message}") from err
        except Exception as err:
            raise LanesError(
                WARMUP_FAILED,
                f"model '{model.name}': its warm-up sample() raised {type(err).__name__}: {err}",
            ) from err

    def device(index: int) -> list[Warmed]:
        dev = devices[index]
        done: list[Warmed] = []
        for m, model in enumerate(models):
            sizes = batch_sizes(model.batching.max_batch_size)
            replica = replicas[m][index]
            if m in native and warm is not None:
                w = _run_native(warm, m, index, model.name, dev.name, sizes, batches)
                if w is None:
                    continue
            elif replica is None or m not in samples:
                continue
            else:
                w = _run(replica, model.name, dev.name, samples[m], sizes, batches)
            log.info(
                "warmed up %s on %s: %d batches (sizes %s) in %.1f ms",
                model.name,
                w.device,
                w.batches,
                ",".join(map(str, sizes)),
                w.seconds * 1e3,
                extra={
                    "model": model.name,
                    "device": w.device,
                    "warmup_ms": round(w.seconds * 1e3, 2),
                },
            )
            done.append(w)
        return done

    with ThreadPoolExecutor(
        max_workers=max(1, len(devices)), thread_name_prefix="lanes-warm"
    ) as ex:
        if on_executors is None:
            per_device = list(ex.map(device, range(len(devices))))
        else:
            run_on = on_executors
            per_device = list(
                ex.map(lambda d: _fastest(run_on(d, lambda: device(d))), range(len(devices)))
            )
    return [w for ws in per_device for w in ws]
