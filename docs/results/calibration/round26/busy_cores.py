"""Does a share of busy cores make a disturbed hour's wake-ups (the twenty-sixth round)?

cpu-2core.toml scaled to the r26 hour's speed (its calls x1.168, hour_speed.py), then with the
hour's extra cores of the rest of the host added to ``host.busy_cores`` (+0.075: the hour's
0.12-0.13 at 200-400 req/s against rounds 22-24's 0.04-0.055; and +0.2), simulated as
against_demo.py does (20 windows of 5 s): the p50 and p99 of ``fifo`` and ``sjf`` at 200 and 600
req/s. The lab's p50 at 200 req/s that hour was 3.1-5.8 ms.

Run from bench/calibrate, with PYTHONPATH=. :
  python ../../docs/results/calibration/round26/busy_cores.py
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from against_demo import GRID_AS_SIMULATED, predicted
from hour_speed import at_hour

from lanes.sim.scenario import Scenario

SCENARIO = Path(__file__).resolve().parents[4] / "examples" / "scenarios" / "cpu-2core.toml"
HOUR = 1.168


def main() -> int:
    sc = at_hour(Scenario.load(SCENARIO), HOUR)
    print(f"{SCENARIO.name}, its calls x{HOUR}; 20 windows of 5 s\n")
    print("| busy_cores added | variant | offered/s | p50 ms | p99 ms |")
    print("|---:|---|---:|---:|---:|")
    for extra in (0.0, 0.075, 0.2):
        host = replace(sc.host, busy_cores=sc.host.busy_cores + extra)
        got = predicted(
            replace(sc, host=host), ["fifo", "sjf"], [200.0, 600.0], 20, 0,
            GRID_AS_SIMULATED, window_s=5.0,
        )  # fmt: skip
        for (variant, rate), fig in sorted(got.items()):
            print(f"| +{extra:g} | {variant} | {rate:.0f} | {fig['p50']:.2f} | {fig['p99']:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
