"""lanes.models.cuda_graphs without a GPU: the capture gate's order and the runner's refusal of a
device that is not CUDA. The graphs themselves are tested on a GPU (tests/models/test_zoo_torch.py,
``test_cuda_graph_replays_equal_eager_calls_on_every_thread``)."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from lanes.models.cuda_graphs import CaptureGate, GraphRunner

WAIT = 5.0


def _started(fn: object) -> threading.Thread:
    t = threading.Thread(target=fn)  # type: ignore[arg-type]
    t.start()
    return t


def test_a_capture_waits_for_running_calls_and_new_calls_wait_for_it() -> None:
    gate = CaptureGate()
    order: list[str] = []
    in_call, release_call = threading.Event(), threading.Event()

    def first_call() -> None:
        with gate.call():
            order.append("call 1 in")
            in_call.set()
            release_call.wait(WAIT)
            order.append("call 1 out")

    def capture() -> None:
        with gate.capture():
            order.append("capture")

    def second_call() -> None:
        with gate.call():
            order.append("call 2")

    threads = [_started(first_call)]
    assert in_call.wait(WAIT)
    threads.append(_started(capture))
    deadline = time.monotonic() + WAIT
    while gate._waiting == 0 and time.monotonic() < deadline:  # the capture is queued
        time.sleep(0.001)
    assert gate._waiting == 1
    threads.append(_started(second_call))
    time.sleep(0.05)  # the second call would run now if a waiting capture did not hold it back
    assert order == ["call 1 in"]
    release_call.set()
    for t in threads:
        t.join(WAIT)
    assert order == ["call 1 in", "call 1 out", "capture", "call 2"]


def test_calls_share_the_gate() -> None:
    gate = CaptureGate()
    both_in = threading.Barrier(2, timeout=WAIT)

    def call() -> None:
        with gate.call():
            both_in.wait()  # raises BrokenBarrierError if the calls excluded each other

    threads = [_started(call), _started(call)]
    for t in threads:
        t.join(WAIT)
    assert not both_in.broken


class _Cpu(SimpleNamespace):
    """A device as torch names one: ``type`` and ``str``."""

    def __str__(self) -> str:
        return "cpu"


def test_the_runner_needs_a_cuda_device() -> None:
    with pytest.raises(ValueError, match="CUDA graphs need a cuda device, not cpu"):
        GraphRunner(None, None, _Cpu(type="cpu"), "char_cnn")
