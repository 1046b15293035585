"""The judged file with the stops its judging grids' calls met (the thirty-seventh round, part
3, docs/results/calibration.md).

**Rule.** As round 36's stops_scenario.py, with both inputs read off this machine's grids
instead of an idle probe and the earlier host's steal: the file judged since round 29
(round27/scenarios/seed157-reading.toml) plus

- ``stop_ms``: the quantile points, at round 36's levels, of every stop the device calls met
  (stops_met.py's ``--json``: a call's rest over 0.1 ms);
- ``stop_run_per_s``: the quantile points of the runs' stops per second of their calls'
  exposure (each run's ``calls.stops.per_s``), a run's rate drawn from them;
- ``stops_per_s``: round 36's floor.

Run, from the repository root (D=docs/results/calibration/round37):
  PYTHONPATH=bench/calibrate .venv/bin/python $D/calls_scenario.py $D/out/stops-met.json \\
    --write $D/scenarios/calls-stops.toml [--base SCENARIO]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "round36"))
from stops_scenario import SCENARIO, write_with_stops  # noqa: E402  (round 36's rule)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("met", type=Path, help="stops_met.py --json file")
    ap.add_argument("--write", type=Path, required=True, help="the scenario to write")
    ap.add_argument("--base", type=Path, default=SCENARIO, help="default: the judged file")
    args = ap.parse_args(argv)
    met = json.loads(args.met.read_text())
    lengths, rates = met["lengths_ms"], met["run_per_s"]
    if not lengths or not rates:
        print("calls_scenario.py: no stops or no runs in that file", file=sys.stderr)
        return 2
    what = f"The judged file ({SCENARIO.name})" if args.base == SCENARIO else args.base.name
    note = (
        f"# {what} with the stops {len(lengths)} device calls met "
        f"on this machine's grids (mean {float(np.mean(lengths)):.2f} ms), each run's rate "
        f"from one of their {len(rates)} runs. Written by round37/calls_scenario.py.\n"
    )
    name = "cpu-2core-calls-stops" if args.base == SCENARIO else f"{args.base.stem}-calls-stops"
    host = write_with_stops(lengths, rates, name, note, args.write, args.base)
    print(f"{args.write}: stop_ms {host['stop_ms']}, stop_run_per_s {host['stop_run_per_s']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
