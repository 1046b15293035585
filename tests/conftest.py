"""Shared fixtures: paths, the native module, synthetic simulator results, and real loopback
HTTP servers for the load engine (``tests/loopback.py``).

Tests that need the native module take the ``core`` fixture (or import ``lanes._core``): they
fail, not skip, when the extension is not built — ``make test`` always builds it first.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from lanes.sim import Scenario, SimResults
from loopback import Server, free_port, serve


@pytest.fixture
def core() -> types.ModuleType:
    """The native module ``lanes._core``."""
    from lanes import _core

    return _core


def latency(scale: float) -> dict[str, float]:
    return {
        "mean": 1.0 * scale,
        "p50": 0.8 * scale,
        "p90": 2.0 * scale,
        "p99": 4.0 * scale,
        "p999": 6.0 * scale,
        "max": 9.0 * scale,
    }


def make_point(
    policy: str, load: float, seed: int, services: list[str], scale: float = 10.0
) -> dict[str, Any]:
    """A result dict shaped as the native module's, with latencies proportional to ``scale``."""
    per_service = {
        name: {
            "requests": 100,
            "throughput_rps": 10.0,
            "latency_ms": latency(scale * (i + 1)),
            **latency(scale * (i + 1)),
            "p99_slowdown": 2.0,
            "max_wait_ms": 5.0,
            "slo_attainment": 0.995,
            "dropped": 0,
        }
        for i, name in enumerate(services)
    }
    return {
        "policy": policy,
        "load": load,
        "seed": seed,
        "requests": 100 * len(services),
        "offered_rps": 100.0 * load,
        "throughput_rps": 100.0 * load,
        "goodput_rps": 99.0 * load,
        "latency_ms": latency(scale),
        "slo_attainment": 0.995,
        "dropped": 0,
        "max_wait_ms": 7.0,
        "p99_slowdown": 3.0,
        "gpu_busy": load,
        "gpu_imbalance": 0.01,
        "cpu_idle": 0.6,
        "gpu_time_s": {"effective": 1.0, "overlap": 0.0, "queue": 0.5},
        "services": per_service,
    }


@pytest.fixture
def fake_results() -> Callable[..., SimResults]:
    """Build :class:`SimResults` for the ocr scenario from synthetic points (no native module).

    ``scale(policy, load, seed)`` sets each point's latency scale.
    """

    def build(
        policies: tuple[str, ...] = ("independent", "sjf"),
        loads: tuple[float, ...] = (0.5, 0.8),
        seeds: tuple[int, ...] = (1, 2),
        scale: Callable[[str, float, int], float] = lambda p, load, s: 100 * load,
        capacity: dict[str, dict[str, float]] | None = None,
    ) -> SimResults:
        scenario = Scenario.load("ocr")
        points = tuple(
            make_point(p, load, s, scenario.service_names, scale(p, load, s))
            for p in policies
            for load in loads
            for s in seeds
        )
        return SimResults(
            scenario=scenario,
            policies=policies,
            loads=loads,
            seeds=seeds,
            requests=1000,
            points=points,
            capacity=capacity,
            version="test",
        )

    return build


@pytest.fixture
def http_server() -> Iterator[Server]:
    """A real HTTP/1.1 server on 127.0.0.1 answering 200; it records what it saw."""
    with serve(200) as server:
        yield server


@pytest.fixture
def status_server() -> Iterator[Callable[[int], Server]]:
    """A factory: ``status_server(503)`` starts a server answering 503; all stop at teardown."""
    with ExitStack() as stack:

        def start(code: int) -> Server:
            return stack.enter_context(serve(code))

        yield start


@pytest.fixture
def closed_port() -> int:
    """A loopback port that was bound and released: nothing listens there."""
    return free_port()
