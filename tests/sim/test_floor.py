"""The default `sjf` meets the issue's floor on the built-in `ocr` host (docs/results/sim.md).

Deterministic (fixed seeds), not timed: the figures come from the simulator, so a change to the
policy engine that loses the floor fails here.
"""

from __future__ import annotations

import statistics

from lanes import sim

SEEDS = (1, 2)


def test_sjf_mean_latency_at_load_0_8_is_at_most_0_85_of_independent() -> None:
    res = sim.run("ocr", ["independent", "sjf"], [0.8], seeds=SEEDS, requests=100_000)
    mean = {
        p: statistics.mean(x["latency_ms"]["mean"] for x in res.points if x["policy"] == p)
        for p in ("independent", "sjf")
    }
    assert mean["sjf"] <= 0.85 * mean["independent"], mean


def test_sjf_capacity_every_service_is_at_least_1_2_of_independent() -> None:
    cap = sim.capacity("ocr", ["independent", "sjf"], seeds=SEEDS, requests=50_000)
    assert cap["sjf"]["every_service"] >= 1.2 * cap["independent"]["every_service"], cap
    assert cap["sjf"]["overall"] >= cap["sjf"]["every_service"]


def test_aging_keeps_sjf_from_starving_the_long_service() -> None:
    # Pure shortest-first lets rnn_zh's tail run away at load 0.9; the default keeps its p99
    # within a few SLOs.
    res = sim.run("ocr", ["sjf:alpha=0,slack=off", "sjf"], [0.9], seeds=SEEDS, requests=100_000)
    p99 = {
        p: statistics.mean(x["services"]["rnn_zh"]["p99"] for x in res.points if x["policy"] == p)
        for p in ("sjf:alpha=0,slack=off", "sjf")
    }
    assert p99["sjf"] < 0.6 * p99["sjf:alpha=0,slack=off"], p99
