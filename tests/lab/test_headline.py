"""The headline's text cells: capacity with its interval and resolution, paired ratios."""

from __future__ import annotations

from typing import Any

import pytest

from lanes.lab import headline as hl

TIMES = "\N{MULTIPLICATION SIGN}"


def block(lows: list[float | None], highs: list[float | None]) -> dict[str, Any]:
    from lanes.lab.aggregate import capacity_block
    from lanes.lab.capacity import Bracket

    return capacity_block(
        {r: Bracket(lo, hi) for r, (lo, hi) in enumerate(zip(lows, highs, strict=True), 1)}
    )


def variant(lows: list[float | None], highs: list[float | None], goodput: list[list[float]]):
    levels = [
        {"level": i, "offered_rps": 100.0 * (i + 1), "concurrency": None,
         "goodput_rps": sum(g) / len(g), "latency_ms": {"p99": 10.0},
         "goodput_rps_by_repeat": {str(r): x for r, x in enumerate(g, 1)}}
        for i, g in enumerate(goodput)
    ]  # fmt: skip
    return {
        "capacity_at_slo": None,
        "capacity_unit": "rps",
        "capacity_search": {**block(lows, highs), "steps": 3},
        "every_model_capacity": block(lows, highs),
        "levels": levels,
    }


def summary(**variants: Any) -> dict[str, Any]:
    return {"baseline": "base", "variants": variants}


def test_a_row_per_variant_with_intervals() -> None:
    head = hl.headline(
        summary(
            base=variant([100.0, 100.0], [150.0, 150.0], [[50.0, 50.0], [40.0, 60.0], [0.0, 0.0]]),
            sjf=variant([200.0, 300.0], [250.0, 350.0], [[50.0, 50.0], [80.0, 120.0], [9.0, 9.0]]),
        )
    )
    assert head.columns[-2:] == ["goodput vs base at 200 rps", "goodput vs base at 300 rps"]
    assert head.steps == 3
    name, cap, resolution, ratio, every, at_200, at_300 = head.rows[1]
    assert (name, resolution) == ("sjf", "+50 rps")
    assert cap.startswith("250 rps [")  # mean of 200 and 300 with its t interval
    assert ratio.startswith(f"2.50{TIMES} [")  # per-repeat 2.0 and 3.0
    assert every == "250 rps (+50 rps)"  # the mean and its resolution
    assert at_200 == f"2.00{TIMES}"  # 80 / 40 and 120 / 60: no spread
    assert at_300 == "9 rps vs 0"  # no ratio to a goodput of 0


def test_a_collapsed_baseline_is_shown_as_a_figure_not_divided_by() -> None:
    # The demo once printed "1001.00x": 250 req/s against a baseline's 0.2 at 500 offered.
    head = hl.headline(
        summary(
            base=variant([100.0], [150.0], [[50.0], [200.0], [2.0]]),
            sjf=variant([200.0], [250.0], [[50.0], [220.0], [250.0]]),
        )
    )
    at_200, at_300 = head.rows[1][-2:]
    assert at_200 == f"1.10{TIMES}"  # a baseline at 100 % of 200 offered: a ratio
    assert at_300 == "250 rps vs 2"  # 2 of 300 offered (< 1 %): both figures
    # the baseline's own row is its ratio to itself, not "2 rps vs 2" (a fresh demo printed
    # "0.25 rps vs 0.25" on the independent row)
    assert head.rows[0][-1] == f"1.00{TIMES}"
    assert head.rows[0][3] == f"1.00{TIMES}"


@pytest.mark.parametrize(
    ("lows", "highs", "text"),
    [
        ([100.0, 120.0], [150.0, 170.0], "+50 rps"),
        ([150.0, 150.0], [None, None], "every load met"),
        # one repeat met every load, the other bisected below the top (a demo once said
        # "every load met" here)
        ([100.0, 150.0], [150.0, None], "+50 rps; 1 of 2 met every load"),
        ([100.0, None], [150.0, 100.0], "below the grid"),
    ],
)
def test_resolution(lows: list[float | None], highs: list[float | None], text: str) -> None:
    assert hl.resolution(block(lows, highs), " rps") == text


def test_a_baseline_collapsed_in_one_repeat_is_shown_as_figures() -> None:
    # A fresh `make demo` printed "441.48x [0.00, 2333.61]": one repeat of the baseline had
    # collapsed (0.2 of 500 offered), the other had not, and the mean of the two per-repeat
    # ratios was read as a gain.
    head = hl.headline(
        summary(
            base=variant([100.0, 100.0], [150.0, 150.0], [[100.0, 100.0], [0.2, 240.0]]),
            sjf=variant([200.0, 200.0], [250.0, 250.0], [[100.0, 100.0], [180.0, 200.0]]),
        )
    )
    at_100, at_200 = head.rows[1][-2:]
    assert at_100 == f"1.00{TIMES}"
    assert at_200 == "190 rps vs 120"  # the means; 0.2 is under 1 % of 200 offered


def with_p99(v: dict[str, Any], p99: float) -> dict[str, Any]:
    v["levels"][-1]["latency_ms"] = {"p99": p99}
    return v


def test_one_leader_is_named_alone() -> None:
    line = hl.leaders(
        summary(
            base=variant([100.0, 110.0], [150.0, 160.0], [[50.0, 50.0]]),
            sjf=variant([300.0, 310.0], [350.0, 360.0], [[50.0, 50.0]]),
        )
    )
    assert line == (
        "highest capacity at SLO: sjf (305 rps); every other variant's interval lies below it"
    )


def test_overlapping_intervals_lead_together_with_their_tails() -> None:
    # base's interval (100 and 300: wide) reaches sjf's: the data cannot order them
    line = hl.leaders(
        summary(
            base=with_p99(variant([100.0, 300.0], [150.0, 350.0], [[50.0, 50.0]]), 95.0),
            sjf=with_p99(variant([250.0, 260.0], [300.0, 310.0], [[50.0, 50.0]]), 134.0),
            fifo=variant([20.0, 20.0], [40.0, 40.0], [[50.0, 50.0]]),
        )
    )
    assert line == (
        "highest capacity at SLO: sjf (255 rps), not separated from base (200 rps) (their 95 % "
        "intervals overlap); p99 at 100 rps: sjf 134 ms, base 95 ms"
    )


def test_every_load_met_by_several_is_a_tie_at_the_top_of_the_grid() -> None:
    line = hl.leaders(
        summary(
            base=variant([100.0, 100.0], [150.0, 150.0], [[50.0, 50.0], [40.0, 60.0]]),
            sjf=with_p99(variant([200.0, 200.0], [None, None], [[50.0, 50.0], [9.0, 9.0]]), 12.5),
            gpu=with_p99(variant([200.0, 200.0], [None, None], [[50.0, 50.0], [9.0, 9.0]]), 10.6),
        )
    )
    assert line == (
        "highest capacity at SLO: sjf (200 rps), not separated from gpu (200 rps) (each met "
        "every load in every repeat); p99 at 200 rps: sjf 12.5 ms, gpu 10.6 ms"
    )


def test_no_searched_capacity_no_line() -> None:
    assert hl.leaders(summary(base=variant([None], [100.0], [[0.0]]))) is None


def test_a_tie_where_one_repeat_bisected_is_an_overlap_not_every_load() -> None:
    # the demo of 2026-11-27: fifo met every load in one repeat and bisected in the others
    line = hl.leaders(
        summary(
            gpu=variant([200.0, 200.0], [None, None], [[50.0, 50.0], [9.0, 9.0]]),
            fifo=variant([200.0, 120.0], [None, 130.0], [[50.0, 50.0], [9.0, 9.0]]),
        )
    )
    assert line is not None and "(their 95 % intervals overlap)" in line
