"""A scenario written back as a ``lanes sim`` TOML file (the twentieth round,
docs/results/calibration.md).

The calibration scripts build a :class:`~lanes.sim.scenario.Scenario` in memory from a lab
grid; this module writes one so that ``lanes sim FILE`` and ``Scenario.load`` read back exactly
that scenario. The rule:

- the top level, ``[host]`` and each ``[[service]]`` carry the keys the scenario parser reads
  (``lanes/sim/scenario.py``), with the values the scenario holds; a host key at its default is
  left out, as ``Host.to_core`` leaves it out for the simulator;
- a service's ``slo_ms`` is written only where it differs from the scenario's, its
  ``deadline_ms`` and its batching's ``num_batch_threads`` only when set; a ``trace`` arrival is
  written as its file's path relative to the folder written into (``Scenario.load`` resolves it
  against the scenario file's folder), or absolute when no folder is given;
- every float is written to :data:`DIGITS` significant digits (a sum such as ``0.5187`` read
  back as ``0.5186999999999999`` is written ``0.5187``);
- ``header`` becomes ``#`` comment lines at the top (how the figures were read);
- the file is written to a temporary beside it and renamed into place, so a failed write leaves
  no half-written scenario.

The test is a round trip: ``Scenario.load`` of the file written equals the scenario
(tests/bench/test_calibrate_scenario_file.py).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import tomlkit

from lanes.sim.scenario import Bursty, Poisson, Scenario, Service, Trace

DIGITS = 10
"""Significant digits of every float written: far finer than any figure measured here."""


def rounded(value: Any) -> Any:
    """``value`` with every float in it (in lists and tables too) to :data:`DIGITS` digits."""
    if isinstance(value, float):
        return float(f"{value:.{DIGITS}g}")
    if isinstance(value, list | tuple):
        return [rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    return value


def table(scenario: Scenario, folder: Path | None = None) -> dict[str, Any]:
    """The scenario as the TOML document's table (see the module's rule), for a file in
    ``folder``."""
    doc: dict[str, Any] = {"name": scenario.name}
    if scenario.description:
        doc["description"] = scenario.description
    doc["slo_ms"] = scenario.slo_ms
    doc["host"] = rounded(scenario.host.to_core())
    doc["service"] = [service(s, scenario.slo_ms, folder) for s in scenario.services]
    return doc


def service(s: Service, slo_ms: float, folder: Path | None = None) -> dict[str, Any]:
    """One ``[[service]]`` table, for a file in ``folder``."""
    out: dict[str, Any] = {
        "name": s.name,
        "share": s.share,
        "workers_per_gpu": s.workers_per_gpu,
        "arrival": arrival(s.arrival, folder),
    }
    for key in ("pre", "gpu", "post"):
        cost = getattr(s, key)
        out[key] = inline(rounded({"dist": cost.dist, "mean_ms": cost.mean_ms, "cv": cost.cv}))
    if s.slo_ms != slo_ms:
        out["slo_ms"] = s.slo_ms
    if s.deadline_ms is not None:
        out["deadline_ms"] = s.deadline_ms
    if s.batching is not None:
        b = s.batching
        batching: dict[str, Any] = {
            "max_batch_size": b.max_batch_size,
            "batch_timeout_micros": b.batch_timeout_micros,
        }
        if b.num_batch_threads is not None:
            batching["num_batch_threads"] = b.num_batch_threads
        batching["batch_ms"] = [[n, rounded(ms)] for n, ms in b.batch_ms]
        out["batching"] = inline(batching)
    return out


def inline(values: dict[str, Any]) -> Any:
    """``values`` as an inline table (``{ mean_ms = 0.5, cv = 0.1 }``), as the committed
    scenarios write costs and batching."""
    t = tomlkit.inline_table()
    t.update(values)
    return t


def arrival(a: Poisson | Bursty | Trace, folder: Path | None = None) -> str | dict[str, Any]:
    """A service's ``arrival``: ``"poisson"``, or its ``bursty`` or ``trace`` table (the trace's
    path relative to ``folder``, absolute without one)."""
    if isinstance(a, Bursty):
        return inline({"kind": "bursty", "cv": a.cv})
    if isinstance(a, Trace):
        path = a.path.resolve()
        if folder is not None:
            return inline({"kind": "trace", "path": os.path.relpath(path, folder.resolve())})
        return inline({"kind": "trace", "path": str(path)})
    return "poisson"


def text(scenario: Scenario, header: str = "", folder: Path | None = None) -> str:
    """The file's text, for a file in ``folder``: ``header`` as comment lines, then the
    scenario's TOML."""
    comments = "".join(f"# {line}".rstrip() + "\n" for line in header.splitlines())
    return comments + ("\n" if comments else "") + tomlkit.dumps(table(scenario, folder))


def write(path: Path, scenario: Scenario, header: str = "") -> None:
    """Writes the scenario to ``path`` atomically (a temporary beside it, renamed into place)."""
    body = text(scenario, header, path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(body)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
