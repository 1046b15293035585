"""The simulated runtime calls' time on their device over their cost, `fifo` and `independent`
at 200 and 600 req/s, for the scenario a same_hour.py reading builds (the sixteenth round,
docs/results/calibration.md): the simulator's counterpart of sched.py's run delay per ms of the
device threads' CPU.

Takes same_hour.py's arguments; the reading's own simulation and table are skipped.
Run from bench/calibrate (same_hour.py's arguments after the script):
  PYTHONPATH=. python ../../docs/results/calibration/round16/held_over_cost.py \
    /tmp/r16/read /tmp/r16/read-waits.json --busy-wakes --deconvolved --against /tmp/r16/grid
"""

import sys
from typing import Any

import same_hour
from compare import scenario_rate, sim
from default_question import with_threads

got: dict[str, Any] = {}


def capture(scenario: Any, variants: list[str], rates: list[float], *_: Any) -> dict[Any, Any]:
    """Keeps the reading's scenario; predicts nothing."""
    got["scenario"] = scenario
    return {(v, r): {"p50": 1, "p99": 1, "goodput": 1} for v in variants for r in rates}


same_hour.simulate = capture
same_hour.emit = lambda *_a, **_k: 0
same_hour.main(sys.argv[1:])
scenario = got["scenario"]
per_load = scenario_rate(scenario)
for policy in ("fifo", "independent"):
    one = with_threads(scenario, 1)
    for rate in (200, 600):
        res = sim.run(one, [policy], [rate / per_load], seeds=[1, 2, 3], requests=40_000)
        effective = sum(p["gpu_time_s"]["effective"] for p in res.points)
        overlap = sum(p["gpu_time_s"]["overlap"] for p in res.points)
        idle = sum(p["cpu_idle"] for p in res.points) / len(res.points)
        print(
            f"{policy} {rate} req/s: held/cost {(effective + overlap) / effective:.3f}, "
            f"cores idle {idle:.3f}"
        )
