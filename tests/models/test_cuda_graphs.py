"""lanes.models.cuda_graphs without a GPU: the capture gate's order and the runner's refusal of a
device that is not CUDA. The graphs themselves are tested on a GPU (tests/models/test_zoo_torch.py,
``test_cuda_graph_replays_equal_eager_calls_on_every_thread``)."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from lanes.models.cuda_graphs import CaptureGate, GraphRunner, buckets
from lanes.serving.warmup import batch_sizes

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


@pytest.mark.parametrize("largest", [0, 1, 2, 3, 8, 12, 16, 33])
def test_graphs_are_captured_at_the_sizes_warm_up_runs(largest: int) -> None:
    assert list(buckets(largest)) == batch_sizes(largest)


def test_a_batch_runs_at_the_smallest_bucket_that_holds_it() -> None:
    runner = GraphRunner.__new__(GraphRunner)  # the rule alone: no device is touched
    runner._sizes = buckets(16)
    assert [runner.bucket(n) for n in (1, 2, 3, 5, 8, 9, 16, 17)] == [1, 2, 4, 8, 8, 16, 16, 17]
    runner._sizes = ()
    assert runner.bucket(7) == 7


def test_the_runner_needs_a_cuda_device() -> None:
    with pytest.raises(ValueError, match="CUDA graphs need a cuda device, not cpu"):
        GraphRunner(None, None, _Cpu(type="cpu"), "char_cnn")
