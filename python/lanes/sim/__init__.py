"""``lanes.sim``: try scheduling policies on a model of a shared-GPU host, with no GPU.

A :class:`Scenario` (a TOML file or a built-in such as ``ocr``) describes the host and its
services; :func:`run` simulates every policy at every load with every seed in one call to the
native discrete-event simulator (``lanes._core``) and returns :class:`SimResults`;
:func:`capacity` finds the highest load that meets the SLO. The user guide is docs/sim.md.

>>> from lanes.sim import Scenario, run
>>> results = run(Scenario.load("ocr"), ["independent", "sjf"], [0.5, 0.8], seeds=[1])
"""

from lanes.sim.runner import Row, SimResults, capacity, run, timeline, write_json
from lanes.sim.scenario import (
    Bursty,
    Cost,
    Host,
    Poisson,
    Scenario,
    Service,
    Trace,
    builtin_scenarios,
)
from lanes.sim.sweep import parse_loads, parse_policies, seeds_from_count
from lanes.sim.trace import load_trace, parse_trace

__all__ = [
    "Bursty",
    "Cost",
    "Host",
    "Poisson",
    "Row",
    "Scenario",
    "Service",
    "SimResults",
    "Trace",
    "builtin_scenarios",
    "capacity",
    "load_trace",
    "parse_loads",
    "parse_policies",
    "parse_trace",
    "run",
    "seeds_from_count",
    "timeline",
    "write_json",
]
