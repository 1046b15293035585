"""The finding rules on evidence tables: each fires on its pattern and stays quiet on a clean
service's numbers (the shapes are those the recorders write; docs/diagnosis.md)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from lanes.diagnose import findings as f

LOOP = (
    'process 1:"python svc.py";thread (1): MainThread;<module> (svc.py:40);'
    "BaseEventLoop.run_forever (asyncio/base_events.py:607);"
    "BaseEventLoop._run_once (asyncio/base_events.py:1884)"
)
SELECT = LOOP + ";EpollSelector.select (selectors.py:468)"
HANDLER = LOOP + ";Handle._run (asyncio/events.py:80);infer (svc.py:12)"
WORKER = 'process 1:"python svc.py";thread (7): Thread-3;run (svc.py:50);handle (svc.py:30)'
IDLE_WORKER = (
    'process 1:"python svc.py";thread (8): Thread-4;run (svc.py:50);'
    "SocketIO.readinto (socket.py:706)"
)


def _cpu(busy: list[float], n: int = 10) -> list[dict[str, Any]]:
    cores = [{"user": b, "system": 0.0, "softirq": 0.0, "iowait": 0.0, "idle": 1 - b} for b in busy]
    return [{"t": 0.1 * (i + 1), "cores": cores} for i in range(n)]


def _procs(threads: list[int], by_core: dict[str, float]) -> dict[str, dict[str, Any]]:
    samples = [
        {
            "t": 0.1 * i,
            "user_s": 0.0,
            "system_s": 0.0,
            "threads": n,
            "ctx_voluntary": 0,
            "ctx_involuntary": 0,
            "cpu_by_core_s": by_core if i else {},
        }
        for i, n in enumerate(threads)
    ]
    return {"1": {"name": "python", "affinity": [0, 1], "samples": samples}}


def _clean(**kw: Any) -> f.Evidence:
    """A clean service's evidence, with ``kw`` replacing parts; ``offcpu`` (blocked samples per
    stack) is turned into the ``--idle`` recorder's counts: on-CPU plus blocked."""
    offcpu = kw.pop("offcpu", Counter({SELECT: 300}))
    oncpu = kw.get("oncpu", Counter({HANDLER: 40}))
    if "every" not in kw:
        kw["every"] = None if offcpu is None or oncpu is None else oncpu + offcpu
    base: dict[str, Any] = {
        "cores": 2,
        "requests": 1000,
        "cpu": _cpu([0.45, 0.40]),
        "processes": _procs([3, 3, 3], {"0": 0.05, "1": 0.05}),
        "oncpu": Counter({HANDLER: 40}),
        "syscalls": {"epoll_wait": {"calls": 1500, "errors": 0, "time_ms": 900.0}},
        "dispersion": 1.05,
    }
    base.update(kw)
    return f.Evidence(**base)


def codes(ev: f.Evidence) -> list[str]:
    return [x.code for x in f.diagnose(ev)]


def test_clean_service_has_no_finding() -> None:
    assert codes(_clean()) == []


@pytest.mark.parametrize(
    ("changes", "code", "named"),
    [
        (
            {
                "cpu": _cpu([0.97, 0.2]),
                "processes": _procs([4, 4, 4], {"0": 0.3, "1": 0.001}),
            },
            "core_saturated",
            "core 0 97% busy",
        ),
        ({"processes": _procs([10, 40, 90], {"0": 0.05, "1": 0.05})}, "threads_excess", "10 -> 90"),
        ({"offcpu": Counter({SELECT: 100, HANDLER: 200})}, "loop_blocked", "infer (svc.py:12)"),
        (
            {
                "syscalls": {"futex": {"calls": 5000, "errors": 0, "time_ms": 300.0}},
                "oncpu": Counter({HANDLER: 40, WORKER + ";render (svc.py:33)": 30}),
                "offcpu": Counter({SELECT: 300, WORKER: 120, IDLE_WORKER: 400}),
            },
            "lock_contention",
            "handle (svc.py:30)",
        ),
        ({"dispersion": 18.0}, "arrivals_clumped", "dispersion 18.0"),
        (
            {"oncpu": Counter({HANDLER: 40, HANDLER + ";dumps (json/__init__.py:231)": 30})},
            "json_encoding",
            "infer (svc.py:12)",
        ),
    ],
)
def test_each_rule_fires_on_its_pattern_and_names_the_cause(
    changes: dict[str, Any], code: str, named: str
) -> None:
    found = f.diagnose(_clean(**changes))
    assert [x.code for x in found] == [code]
    assert named in found[0].message


def test_a_core_busy_with_other_work_is_not_the_servers_saturation() -> None:
    # The fresh-clone CI case: a light server (5 % of a core) that ran only on the core other
    # jobs kept 80-97 % busy.
    ev = _clean(cpu=_cpu([0.97, 0.2]), processes=_procs([4, 4, 4], {"0": 0.005}))
    assert codes(ev) == []


def test_below_the_thresholds_nothing_fires() -> None:
    near = _clean(
        cpu=_cpu([0.80, 0.55]),  # busy but not saturated, other core not idle
        processes=_procs([9, 9, 10], {"0": 0.3}),  # many threads but not growing by a core
        offcpu=Counter({SELECT: 300, HANDLER: 20}),  # blocked 6 %
        dispersion=3.0,
    )
    assert codes(near) == []


def test_futex_without_a_contended_frame_is_not_contention() -> None:
    # futex calls per request, but every blocked thread is idle by design (waiting for work)
    ev = _clean(
        syscalls={"futex": {"calls": 5000, "errors": 0, "time_ms": 300.0}},
        offcpu=Counter({SELECT: 300, IDLE_WORKER: 400}),
    )
    assert codes(ev) == []


def test_a_rule_without_its_evidence_says_nothing() -> None:
    ev = _clean(cpu=None, processes=None, oncpu=None, offcpu=None, syscalls=None, dispersion=None)
    assert ev.every is None
    assert codes(ev) == []


def test_too_few_samples_are_noise() -> None:
    ev = _clean(oncpu=Counter({HANDLER: 4, HANDLER + ";dumps (json/__init__.py:231)": 3}))
    assert codes(ev) == []


def test_loop_blocking_spread_over_many_frames_is_said_to_be_the_gil_or_a_lock() -> None:
    spread = Counter(
        {SELECT: 100, **{f"{LOOP};Handle._run (x.py:1);f{i} (x.py:{i})": 20 for i in range(8)}}
    )
    found = f.diagnose(_clean(offcpu=spread))
    assert [x.code for x in found] == ["loop_blocked"]
    assert "spread over many frames" in found[0].message


def test_sampling_noise_is_not_blocking() -> None:
    # the two recorders disagree a little on every busy stack: no blocking in sum
    stacks = [f"{LOOP};Handle._run (x.py:1);f{i} (x.py:{i})" for i in range(10)]
    on = Counter({st: 6 for st in stacks})
    every = Counter({st: 6 + (2 if i % 2 else -2) for i, st in enumerate(stacks)})
    every[SELECT] = 100
    assert codes(_clean(oncpu=on, every=every)) == []


def test_clumps_from_a_saturated_server_are_not_the_clients() -> None:
    # the client waited for connections the server held: its sends left late, in bursts
    assert codes(_clean(dispersion=6.0, late_sends=0.9)) == []
    assert codes(_clean(dispersion=6.0, late_sends=0.01)) == ["arrivals_clumped"]


def test_a_loop_on_cpu_all_the_time_is_the_ceiling_and_its_hot_frames_are_named() -> None:
    busy = Counter(
        {HANDLER: 90, LOOP + ";Handle._run (asyncio/events.py:80);encode_body (c.py:3)": 60}
    )
    found = f.diagnose(_clean(oncpu=busy, offcpu=Counter({SELECT: 5})))
    assert [x.code for x in found] == ["loop_saturated"]
    assert "infer (svc.py:12) 60%" in found[0].message


def test_a_thread_that_never_runs_is_not_contended() -> None:
    # a resource tracker blocked on its pipe all window long: idle by design, not a lock
    tracker = (
        'process 2:"tracker";thread (9): MainThread;main (multiprocessing/resource_tracker.py:227)'
    )
    ev = _clean(
        syscalls={"futex": {"calls": 5000, "errors": 0, "time_ms": 300.0}},
        offcpu=Counter({SELECT: 300, tracker: 300}),
    )
    assert codes(ev) == []
