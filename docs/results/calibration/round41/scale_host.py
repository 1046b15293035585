"""The forty-first round's scratch variants of the file: the hooks' CPU and the background.

Writes a copy of a scenario with every service's ``pre`` and ``post`` mean scaled by ``HOOKS``
and ``host.busy_cores`` scaled by ``BUSY`` (everything else as it is; hour_speed.py's
``at_hour`` does the same for the runtime calls), through scenario_file.py, to try whether the
fast hour of 2026-12-05 is the committed file's host with the work outside the calls faster
(the speed probe ran 0.78-0.85x grid 157's) or without the background load.

Run:  PYTHONPATH=bench/calibrate python docs/results/calibration/round41/scale_host.py \
          SRC DST HOOKS BUSY
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import scenario_file

from lanes.sim.scenario import Scenario


def scaled(scenario: Scenario, hooks: float, busy: float) -> Scenario:
    """``scenario`` with the hooks' means x ``hooks`` and the background cores x ``busy``."""
    services = tuple(
        replace(
            s,
            pre=replace(s.pre, mean_ms=s.pre.mean_ms * hooks),
            post=replace(s.post, mean_ms=s.post.mean_ms * hooks),
        )
        for s in scenario.services
    )
    host = replace(scenario.host, busy_cores=scenario.host.busy_cores * busy)
    return replace(scenario, services=services, host=host)


def main(argv: list[str]) -> int:
    src, dst, hooks, busy = Path(argv[0]), Path(argv[1]), float(argv[2]), float(argv[3])
    header = f"{src.name} with the hooks' CPU x{hooks:g} and busy_cores x{busy:g} (scale_host.py)"
    scenario_file.write(dst, scaled(Scenario.load(src), hooks, busy), header)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
