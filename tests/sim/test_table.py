"""The text tables: one row per (policy, load), plain when not on a terminal."""

import io
import math

import pytest

from lanes.sim import table
from lanes.sim.table import print_results


def render(results) -> str:
    out = io.StringIO()
    print_results(results, out)
    return out.getvalue()


def test_one_row_per_policy_and_load(fake_results) -> None:
    text = render(fake_results(policies=("independent", "fifo", "sjf"), loads=(0.3, 0.5, 0.9)))
    rows = [line.split() for line in text.splitlines()]
    data = [r for r in rows if r and r[0] in ("independent", "fifo", "sjf")]
    assert [(r[0], r[1]) for r in data] == [
        (p, load) for p in ("independent", "fifo", "sjf") for load in ("0.3", "0.5", "0.9")
    ]


def test_columns_hold_the_mean_over_seeds(fake_results) -> None:
    results = fake_results(
        policies=("fifo",), loads=(0.5,), seeds=(1, 2), scale=lambda p, load, seed: 10.0 * seed
    )
    row = next(line.split() for line in render(results).splitlines() if line.startswith("fifo"))
    # policy, load, tput, mean, p50, p99, p99.9, SLO %, GPU %, CPU idle %, per-service p99
    expected = "fifo 0.5 50.0 15.0 12.0 60.0 90.0 99.50 50.0 60.0 60.0/120/180"
    assert row == expected.split()


def test_headers_and_title(fake_results) -> None:
    text = render(fake_results())
    for needle in ("policy", "load", "mean", "p50", "p99", "p99.9", "SLO", "GPU", "CPU", "idle"):
        assert needle in text
    assert "cnn/rnn_zh/rnn_en" in text
    assert "ocr: 1,000 requests x 2 seed(s), SLO 150 ms" in text


def test_plain_output_has_no_escape_codes_and_fits_100_columns(fake_results) -> None:
    results = fake_results(
        policies=("independent", "semaphore", "fifo", "sjf"),
        loads=(0.5, 0.9),
        scale=lambda *a: 12_345.0,  # wide numbers
        capacity={"sjf": {"overall": 0.87, "every_service": 0.81}},
    )
    text = render(results)
    assert "\x1b" not in text
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 100


def test_capacity_table(fake_results) -> None:
    results = fake_results(
        capacity={
            "independent": {"overall": 0.62, "every_service": 0.5},
            "sjf": {"overall": 0.875, "every_service": math.nan},
        }
    )
    text = render(results)
    assert "capacity" in text
    rows = [line.split() for line in text.splitlines()]
    assert ["independent", "0.62", "0.50"] in rows
    assert ["sjf", "0.88", "-"] in rows


def test_no_capacity_table_unless_measured(fake_results) -> None:
    assert "capacity" not in render(fake_results())


@pytest.mark.parametrize(
    ("value", "text"),
    [(4.214, "4.21"), (42.14, "42.1"), (421.4, "421"), (42_140.0, "42,140"), (math.nan, "-")],
)
def test_ms_format(value: float, text: str) -> None:
    assert table._ms(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [(1.0, "100"), (0.99996, "99.99"), (0.995, "99.50"), (0.5, "50.00"), (0.0, "0.00")],
)
def test_slo_format_never_rounds_up_to_100(value: float, text: str) -> None:
    assert table._slo(value) == text
