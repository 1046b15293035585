"""Running a sweep: every (policy, load, seed) point in one call to the native simulator.

:func:`run` checks its arguments, hands all points to ``lanes._core.simulate`` at once (the
native side runs them in parallel and returns one result dict per point, in order) and wraps
them in :class:`SimResults`. :func:`capacity` asks the native side for the highest load that
still meets the SLO. :meth:`SimResults.rows` averages the seeds of each (policy, load) for the
table and the plot; :meth:`SimResults.to_json` is the document ``lanes sim --json`` writes.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lanes.errors import BAD_ARGUMENT, LanesError
from lanes.files import write_text_atomic
from lanes.sim.scenario import Scenario
from lanes.sim.sweep import canonical_policies

DEFAULT_SEEDS = (1, 2, 3)
DEFAULT_REQUESTS = 200_000
_MAX_SEED = 2**64 - 1


@dataclass(frozen=True)
class Row:
    """One (policy, load): the mean over its seeds of the figures the table shows."""

    policy: str
    load: float
    seeds: int
    throughput_rps: float
    mean_ms: float
    p50_ms: float
    p99_ms: float
    p999_ms: float
    slo_attainment: float
    gpu_busy: float
    cpu_idle: float
    service_p99_ms: Mapping[str, float]


@dataclass(frozen=True)
class SimResults:
    """The points of one sweep, in policy-load-seed order, and optional capacities."""

    scenario: Scenario
    policies: tuple[str, ...]
    loads: tuple[float, ...]
    seeds: tuple[int, ...]
    requests: int
    points: tuple[dict[str, Any], ...]
    """The native module's result dicts, one per point (keys: docs/sim.md)."""
    capacity: Mapping[str, Mapping[str, float]] | None = None
    """``{policy: {"overall": load, "every_service": load}}`` when asked for."""
    version: str = ""
    """The native simulator's version."""

    def rows(self) -> list[Row]:
        """One :class:`Row` per (policy, load), in sweep order (policy-major)."""
        groups: dict[tuple[str, float], list[dict[str, Any]]] = {}
        for point in self.points:
            groups.setdefault((point["policy"], point["load"]), []).append(point)
        rows = []
        for (policy, load), points in groups.items():
            rows.append(
                Row(
                    policy=policy,
                    load=load,
                    seeds=len(points),
                    throughput_rps=_mean(p["throughput_rps"] for p in points),
                    mean_ms=_mean(p["latency_ms"]["mean"] for p in points),
                    p50_ms=_mean(p["latency_ms"]["p50"] for p in points),
                    p99_ms=_mean(p["latency_ms"]["p99"] for p in points),
                    p999_ms=_mean(p["latency_ms"]["p999"] for p in points),
                    slo_attainment=_mean(p["slo_attainment"] for p in points),
                    gpu_busy=_mean(p["gpu_busy"] for p in points),
                    cpu_idle=_mean(p["cpu_idle"] for p in points),
                    service_p99_ms={
                        name: _mean(p["services"][name]["p99"] for p in points)
                        for name in self.scenario.service_names
                    },
                )
            )
        return rows

    def with_capacity(self, capacity: Mapping[str, Mapping[str, float]]) -> SimResults:
        """These results with the capacities from :func:`capacity` attached."""
        return replace(self, capacity=capacity)

    def to_json(self, command: str) -> dict[str, Any]:
        """The ``--json`` document; non-finite numbers become ``null`` (strict JSON)."""
        doc: dict[str, Any] = {
            "scenario": self.scenario.name,
            "command": command,
            "version": self.version,
            "policies": list(self.policies),
            "loads": list(self.loads),
            "seeds": list(self.seeds),
            "requests": self.requests,
            "points": list(self.points),
        }
        if self.capacity is not None:
            doc["capacity"] = {p: dict(c) for p, c in self.capacity.items()}
        result: dict[str, Any] = _finite(doc)
        return result


def run(
    scenario: Scenario | str | os.PathLike[str],
    policies: Sequence[str],
    loads: Sequence[float],
    seeds: Sequence[int] = DEFAULT_SEEDS,
    requests: int = DEFAULT_REQUESTS,
    threads: int = 0,
) -> SimResults:
    """Simulate every policy at every load with every seed (one native call, in parallel)."""
    from lanes import _core

    if not isinstance(scenario, Scenario):
        scenario = Scenario.load(scenario)
    _check_loads(loads)
    _check_common(seeds, requests, threads)
    names = canonical_policies(list(policies))
    points = [(p, float(load), seed) for p in names for load in loads for seed in seeds]
    results = _core.simulate(scenario.to_core(), points, requests, threads)
    if len(results) != len(points):
        raise RuntimeError(f"lanes._core.simulate: {len(results)} results for {len(points)}")
    return SimResults(
        scenario=scenario,
        policies=tuple(names),
        loads=tuple(float(load) for load in loads),
        seeds=tuple(seeds),
        requests=requests,
        points=tuple(results),
        version=_core.version(),
    )


def timeline(
    scenario: Scenario | str | os.PathLike[str],
    policy: str,
    load: float,
    seed: int = 1,
    requests: int = DEFAULT_REQUESTS,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One point (as :func:`run` gives it) and its device timeline: every batch's span on its
    device, ms from the first arrival (docs/sim.md, "Device timeline")."""
    from lanes import _core

    if not isinstance(scenario, Scenario):
        scenario = Scenario.load(scenario)
    _check_loads([load])
    _check_common([seed], requests, 1)
    (name,) = canonical_policies([policy])
    return _core.simulate_timeline(scenario.to_core(), name, float(load), seed, requests)


def capacity(
    scenario: Scenario | str | os.PathLike[str],
    policies: Sequence[str],
    seeds: Sequence[int] = DEFAULT_SEEDS,
    requests: int = DEFAULT_REQUESTS,
    threads: int = 0,
) -> dict[str, dict[str, float]]:
    """Per policy, the highest load at which >= 99 % of requests (overall; of every service)
    meet their SLO: ``{policy: {"overall": load, "every_service": load}}``."""
    from lanes import _core

    if not isinstance(scenario, Scenario):
        scenario = Scenario.load(scenario)
    _check_common(seeds, requests, threads)
    names = canonical_policies(list(policies))
    core = scenario.to_core()
    return {p: _core.capacity(core, p, list(seeds), requests, threads) for p in names}


def write_json(path: Path, doc: Mapping[str, Any]) -> None:
    """Write ``doc`` as indented strict JSON, atomically."""
    write_text_atomic(path, json.dumps(doc, indent=1, allow_nan=False) + "\n")


def _check_loads(loads: Sequence[float]) -> None:
    if not loads:
        raise LanesError(BAD_ARGUMENT, "loads: empty: give at least one load > 0")
    for load in loads:
        if not (isinstance(load, int | float) and math.isfinite(load) and load > 0):
            raise LanesError(BAD_ARGUMENT, f"loads: {load!r}: a load must be a number > 0")


def _check_common(seeds: Sequence[int], requests: int, threads: int) -> None:
    if not seeds:
        raise LanesError(BAD_ARGUMENT, "seeds: empty: give at least one seed")
    for seed in seeds:
        if not (isinstance(seed, int) and 0 <= seed <= _MAX_SEED):
            raise LanesError(BAD_ARGUMENT, f"seeds: {seed!r}: a seed is an integer in [0, 2^64)")
    if requests < 1:
        raise LanesError(BAD_ARGUMENT, f"requests: {requests}: must be at least 1")
    if threads < 0:
        raise LanesError(BAD_ARGUMENT, f"threads: {threads}: must be >= 0 (0: all cores)")


def _mean(values: Iterable[Any]) -> float:
    xs = [float(v) if v is not None else math.nan for v in values]
    return math.fsum(xs) / len(xs) if xs else math.nan


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinity replaced by ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
