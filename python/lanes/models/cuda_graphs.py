"""A PyTorch module run through CUDA graphs: one graph per input shape and calling thread.

A small network driven from Python spends most of a batch launching kernels, not running them
(docs/results/gpu.md: the zoo's batches keep an H100 busy 10 to 28 % of their time). A CUDA graph
records a call's kernels once and replays them with one launch, so a batch costs about its GPU
time plus the copies in and out.

The rule (:class:`GraphRunner`):

- **Per bucket.** A graph replays fixed shapes and fixed buffers, so each input shape gets its
  own graph, its own static input and its own static output. A batch of n rows is padded to the
  smallest of ``buckets`` (:func:`buckets`: the batch sizes lanes' warm-up runs, 1, the powers
  of two below the model's largest batch, and that batch) that holds it: its rows are copied into
  the first n rows of that bucket's static input, and the first n rows of the output come back.
  The rows past n keep an earlier batch's data, which is sound for networks whose rows do not
  mix (the zoo's convolutions, GRUs and linear layers run each row alone). Warm-up captures
  every bucket, so no batch size seen later is captured while serving: a capture there costs
  about 13 ms with the device held (run 4 on an H200 caught a batch of 9 doing so). A batch
  larger than every bucket, or any batch without buckets, gets a graph of its exact shape.
  Shapes past ``limit`` distinct ones (per thread) run eagerly, so a model fed ever-new shapes
  holds bounded memory.
- **Per thread.** Graphs and their buffers belong to the OS thread that captured them (a table
  keyed by ``threading.get_ident()``; not a ``threading.local``, whose data a Rust executor
  thread loses each time it detaches from the interpreter): two executor threads of one model
  (``independent``'s workers) never write one static input at once. lanes' warm-up runs every
  batch size on every executor thread, so each thread captures its graphs before the server is
  ready.
- **A capture runs alone.** Work launched on the legacy default stream while another thread
  captures breaks the capture (CUDA refuses it, or PyTorch refuses a host copy "during CUDA
  graph capture"). So every call of every runner in the process (replay or eager) holds a
  shared gate, and a capture holds it exclusively: it waits for the running calls to end, and
  calls that arrive meanwhile wait for it (a waiting capture goes first, so steady traffic
  cannot starve it). Captures happen at warm-up; after ready, only a shape never seen before
  takes the gate exclusively.
- **Capture.** As PyTorch's documentation asks: a few eager calls on a side stream (cuDNN and
  cuBLAS pick their algorithms and make their handles), then one call under
  ``torch.cuda.graph`` with ``capture_error_mode="thread_local"`` (other threads may use the
  GPU meanwhile). A capture that fails is logged once per shape and thread, and that shape runs
  eagerly from then on: graphs are a speed-up, never a reason to refuse a batch.
- **Replay.** The input is copied into the static input on the calling thread's current stream,
  the graph is replayed there, and the static output is copied back to host memory (a new array:
  the next replay overwrites the static output). Replays from several threads share the device's
  legacy default stream, so they queue on the GPU one after another, as any kernels launched
  there do.

Needs torch with CUDA; built only for ``cuda:N`` targets (:class:`lanes.models.zoo_torch.
TorchZooModel` with ``cuda_graphs``; ``lanes serve --cuda-graphs``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

log = logging.getLogger("lanes.serve")

WARMUP_CALLS = 3
"""Eager calls on a side stream before a capture (PyTorch's documented recipe)."""
DEFAULT_LIMIT = 64
"""Distinct input shapes captured per thread; more run eagerly."""

_EAGER = object()
"""A shape's table entry when it runs eagerly (capture failed, or past the limit)."""


class CaptureGate:
    """Calls share the gate; a capture holds it alone (see the module docstring). A waiting
    capture holds new calls back."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._calls = 0
        self._capturing = False
        self._waiting = 0

    @contextmanager
    def call(self) -> Iterator[None]:
        with self._cond:
            while self._capturing or self._waiting:
                self._cond.wait()
            self._calls += 1
        try:
            yield
        finally:
            with self._cond:
                self._calls -= 1
                if self._calls == 0:
                    self._cond.notify_all()

    @contextmanager
    def capture(self) -> Iterator[None]:
        with self._cond:
            self._waiting += 1
            while self._capturing or self._calls:
                self._cond.wait()
            self._waiting -= 1
            self._capturing = True
        try:
            yield
        finally:
            with self._cond:
                self._capturing = False
                self._cond.notify_all()


GATE = CaptureGate()
"""The process's one gate: every runner's calls and captures (the legacy default stream is the
process's)."""


def buckets(max_batch_size: int) -> tuple[int, ...]:
    """The batch sizes a model's graphs are captured at: those lanes' warm-up runs
    (:func:`lanes.serving.warmup.batch_sizes`: 1, the powers of two below ``max_batch_size``,
    and ``max_batch_size``; ``(1,)`` when batching is off)."""
    from lanes.serving.warmup import batch_sizes

    return tuple(batch_sizes(max_batch_size))


class GraphRunner:
    """``net`` on CUDA ``target`` through graphs captured per bucket and thread (see the module
    docstring). Call it with a float32 numpy array; it returns the output as a numpy array, as
    ``net(x).cpu().numpy()`` would. ``sizes``: the batch sizes to pad to (ascending; empty: every
    shape its own graph)."""

    def __init__(
        self,
        torch: Any,
        net: Any,
        target: Any,
        name: str,
        sizes: tuple[int, ...] = (),
        limit: int = DEFAULT_LIMIT,
    ) -> None:
        if getattr(target, "type", None) != "cuda":
            raise ValueError(f"CUDA graphs need a cuda device, not {target}")
        self._torch, self._net, self._target, self._name = torch, net, target, name
        self._sizes = tuple(sorted(sizes))
        self._limit = limit
        self._tables: dict[int, dict[tuple[int, ...], Any]] = {}

    def bucket(self, rows: int) -> int:
        """The batch size a batch of ``rows`` runs at: the smallest of ``sizes`` that holds it,
        else ``rows`` itself."""
        return next((b for b in self._sizes if b >= rows), rows)

    def _table(self) -> dict[tuple[int, ...], Any]:
        """The calling OS thread's shapes (only that thread reads or writes its table)."""
        return self._tables.setdefault(threading.get_ident(), {})

    def captured(self) -> int:
        """How many shapes the calling thread replays through a graph."""
        return sum(1 for e in self._table().values() if e is not _EAGER)

    def _capture(self, shape: tuple[int, ...]) -> Any:
        torch = self._torch
        static_in = torch.zeros(shape, dtype=torch.float32, device=self._target)
        side = torch.cuda.Stream(device=self._target)
        side.wait_stream(torch.cuda.current_stream(self._target))
        with torch.cuda.stream(side):
            for _ in range(WARMUP_CALLS):
                self._net(static_in)
        torch.cuda.current_stream(self._target).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            static_out = self._net(static_in)
        torch.cuda.synchronize(self._target)
        return graph, static_in, static_out

    def _captured_or_eager(self, shape: tuple[int, ...]) -> Any:
        with GATE.capture():
            try:
                return self._capture(shape)
            except Exception as err:  # a capture failure: run this shape eagerly
                log.warning(
                    "%s: CUDA graph capture of shape %s failed on %s, running it eagerly: %s",
                    self._name,
                    list(shape),
                    self._target,
                    str(err).splitlines()[0] if str(err) else type(err).__name__,
                )
                return _EAGER

    def __call__(self, x: npt.NDArray[np.float32]) -> npt.NDArray[Any]:
        torch = self._torch
        table = self._table()
        rows = int(x.shape[0])
        shape = (self.bucket(rows), *(int(d) for d in x.shape[1:]))
        entry = table.get(shape)
        if entry is None:
            entry = _EAGER if len(table) >= self._limit else self._captured_or_eager(shape)
            table[shape] = entry
        src = torch.from_numpy(x)
        with GATE.call():
            if entry is _EAGER:
                return np.asarray(self._net(src.to(self._target)).cpu().numpy())
            graph, static_in, static_out = entry  # type: ignore[misc]
            static_in[:rows].copy_(src)  # rows past `rows` keep an earlier batch's: they never mix
            graph.replay()
            return np.asarray(static_out[:rows].cpu().numpy())


__all__ = ["DEFAULT_LIMIT", "GATE", "CaptureGate", "GraphRunner", "buckets"]
