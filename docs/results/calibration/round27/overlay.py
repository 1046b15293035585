"""A scenario with some of another scenario's figures laid on it (the twenty-seventh round).

``BASE`` keeps everything but the named parts, which come from ``FROM``:

- ``host``: the host's state beside the calls, as a same-hour reading gives it: the rest of the
  host's cores (``busy_cores``), the device holds (``device_hold_ms``, ``device_hold_busy_ms``),
  the wake-ups (``pre_wake_ms``, ``post_wake_ms`` and their ``_busy_ms``) and the client part
  (``client_ms``);
- ``preempt``: the calls' preemptions (``call_preempt_per_ms``, ``call_preempt_ms``);
- ``server``: every service's ``pre`` and ``post`` (the server's CPU beyond the calls).

The runtime calls stay ``BASE``'s: against_demo.py ``--hour-speed`` scales them to the hour.

Run:  python overlay.py BASE FROM --parts host[,preempt,server] --out OUT.toml
      (with bench/calibrate on PYTHONPATH)
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import scenario_file  # bench/calibrate

from lanes.sim.scenario import Scenario

HOST = (
    "busy_cores",
    "device_hold_ms",
    "device_hold_busy_ms",
    "pre_wake_ms",
    "post_wake_ms",
    "pre_wake_busy_ms",
    "post_wake_busy_ms",
    "client_ms",
)
PREEMPT = ("call_preempt_per_ms", "call_preempt_ms")
PARTS = ("host", "preempt", "server")


def overlay(base: Scenario, source: Scenario, parts: set[str]) -> Scenario:
    """``base`` with ``parts`` (of :data:`PARTS`) taken from ``source`` (same services)."""
    keys = (HOST if "host" in parts else ()) + (PREEMPT if "preempt" in parts else ())
    host = replace(base.host, **{k: getattr(source.host, k) for k in keys})
    by_name = {s.name: s for s in source.services}
    services = []
    for s in base.services:
        o = by_name[s.name]
        if "server" in parts:
            s = replace(s, pre=o.pre, post=o.post)
        services.append(s)
    return replace(base, host=host, services=tuple(services))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("base", type=Path)
    ap.add_argument("source", type=Path)
    ap.add_argument("--parts", required=True, help=f"comma-separated, of {', '.join(PARTS)}")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    if not parts <= set(PARTS):
        ap.error(f"--parts: {sorted(parts - set(PARTS))} not of {', '.join(PARTS)}")
    scenario = overlay(Scenario.load(args.base), Scenario.load(args.source), parts)
    header = f"{args.base.name} with {args.parts} from {args.source.name} (round27/overlay.py)"
    scenario_file.write(args.out, scenario, header)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
