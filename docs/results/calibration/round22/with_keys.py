"""A scenario file with host keys set, or every call's cost of some models scaled (the
twenty-second round's scratch readings, tried.sh and read-3.sh).

The scenario is loaded, changed with ``dataclasses.replace`` (a ``KEY=VALUE`` is a TOML value
for the ``[host]`` key of that name; a ``MODEL*FACTOR`` multiplies the service's ``gpu`` mean
and every ``batch_ms`` point) and written back by bench/calibrate/scenario_file.py, headed by
the source and the changes; ``Scenario.load`` of the result checks it as any scenario file.

Run from bench/calibrate, with PYTHONPATH=. :
  python ../../docs/results/calibration/round22/with_keys.py SRC DST [KEY=VALUE ...]
      [MODEL*FACTOR ...]
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import scenario_file
import tomllib

from lanes.sim.scenario import Scenario, Service


def scaled(service: Service, factor: float) -> Service:
    """``service`` with its call's mean cost and every batch size's cost times ``factor``."""
    gpu = replace(service.gpu, mean_ms=service.gpu.mean_ms * factor)
    batching = service.batching and replace(
        service.batching, batch_ms=tuple((n, ms * factor) for n, ms in service.batching.batch_ms)
    )
    return replace(service, gpu=gpu, batching=batching)


def main(argv: list[str]) -> int:
    src, dst, changes = Path(argv[0]), Path(argv[1]), argv[2:]
    keys = tomllib.loads("\n".join(a for a in changes if "=" in a))
    host = {k: tuple(v) if isinstance(v, list) else v for k, v in keys.items()}
    scale = {m: float(f) for m, f in (a.split("*") for a in changes if "*" in a)}
    scenario = Scenario.load(src)
    services = tuple(scaled(s, scale[s.name]) if s.name in scale else s for s in scenario.services)
    changed = replace(scenario, host=replace(scenario.host, **host), services=services)
    source = f"{src.parent.parent.name}/{src.parent.name}/{src.name}"
    scenario_file.write(dst, changed, f"{source} with {' '.join(changes)} (with_keys.py)")
    Scenario.load(dst)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
