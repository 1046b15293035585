"""The sweep axes: loads, policies and seeds from their command-line text."""

import pytest

from lanes.errors import LanesError
from lanes.sim import parse_loads, parse_policies, seeds_from_count
from lanes.sim.sweep import MAX_LOADS, split_policies

LOADS = [
    ("0.5", [0.5]),
    ("0.3,0.5", [0.3, 0.5]),
    (" 0.3 , 0.5 ", [0.3, 0.5]),
    ("0.9,0.3", [0.3, 0.9]),
    ("0.5,0.5", [0.5]),
    ("1e-1", [0.1]),
    ("1.2", [1.2]),
    ("0.5:0.9:0.1", [0.5, 0.6, 0.7, 0.8, 0.9]),
    ("0.1:1:0.1", [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]),
    ("0.5:0.9:0.3", [0.5, 0.8]),
    ("0.5:0.5:0.1", [0.5]),
    ("0.3,0.6:0.8:0.1,0.95", [0.3, 0.6, 0.7, 0.8, 0.95]),
    ("0.5:0.7:0.1,0.6", [0.5, 0.6, 0.7]),
]


@pytest.mark.parametrize(("text", "expected"), LOADS)
def test_parse_loads(text: str, expected: list[float]) -> None:
    assert parse_loads(text) == expected


def test_ranges_have_no_float_drift() -> None:
    assert parse_loads("0.1:0.3:0.1") == [0.1, 0.2, 0.3]  # not 0.30000000000000004
    assert len(parse_loads(f"0.01:{MAX_LOADS / 100}:0.01")) == MAX_LOADS


BAD_LOADS = [
    ("", "an empty item"),
    ("0.3,,0.5", "an empty item"),
    ("abc", "'abc' is not a number"),
    ("0.3,x", "'x' is not a number"),
    ("0", "a load must be a number > 0"),
    ("-0.5", "a load must be a number > 0"),
    ("nan", "a load must be a number > 0"),
    ("inf", "a load must be a number > 0"),
    ("0.1:0.5", "a range is A:B:STEP"),
    ("0.1:0.5:0.1:2", "a range is A:B:STEP"),
    ("0.9:0.5:0.1", "the end 0.5 is below the start 0.9"),
    ("0.1:0.5:0", "a step must be a number > 0"),
    ("0.1:0.5:-0.1", "a step must be a number > 0"),
    ("0.001:1:0.001", "has 1000 loads: at most 200"),
    (",".join(str(i / 1000) for i in range(1, 300)), "more than 200 loads"),
]


@pytest.mark.parametrize(("text", "needle"), BAD_LOADS, ids=[c[1] for c in BAD_LOADS])
def test_parse_loads_refuses(text: str, needle: str) -> None:
    with pytest.raises(LanesError) as info:
        parse_loads(text)
    assert info.value.code == "bad_argument"
    assert info.value.message.startswith("--loads ")
    assert needle in info.value.message
    assert "\n" not in info.value.message


SPLITS = [
    ("independent,fifo,sjf", ["independent", "fifo", "sjf"]),
    (" fifo , sjf ", ["fifo", "sjf"]),
    ("limit:2,sjf", ["limit:2", "sjf"]),
    ("sjf:alpha=0.5,slack=20", ["sjf:alpha=0.5,slack=20"]),
    ("fifo,sjf:alpha=0.5,slack=20,edf", ["fifo", "sjf:alpha=0.5,slack=20", "edf"]),
    ("fifo,alpha=1", ["fifo", "alpha=1"]),  # not an argument list: left for parse_policy
]


@pytest.mark.parametrize(("text", "expected"), SPLITS)
def test_split_policies(text: str, expected: list[str]) -> None:
    assert split_policies(text) == expected


@pytest.mark.parametrize("text", ["", "fifo,,sjf", "fifo,"])
def test_split_policies_refuses_empty_items(text: str) -> None:
    with pytest.raises(LanesError) as info:
        split_policies(text)
    assert info.value.code == "bad_argument"


def test_seeds_from_count() -> None:
    assert seeds_from_count(1) == [1]
    assert seeds_from_count(3) == [1, 2, 3]


@pytest.mark.parametrize("count", [0, -1, 1001])
def test_seeds_from_count_refuses(count: int) -> None:
    with pytest.raises(LanesError) as info:
        seeds_from_count(count)
    assert info.value.code == "bad_argument"
    assert info.value.message.startswith(f"--seeds '{count}'")


# Below: policies are checked by the native module.


def test_parse_policies_canonical(core) -> None:
    assert parse_policies("independent,fifo,sjf") == [
        core.parse_policy(p) for p in ("independent", "fifo", "sjf")
    ]


def test_parse_policies_every_documented_policy(core) -> None:
    names = parse_policies("independent,semaphore,fifo,limit:2,sjf,edf")
    assert len(names) == 6


def test_parse_policies_unknown_names_the_value_and_the_allowed(core) -> None:
    with pytest.raises(LanesError) as info:
        parse_policies("independent,bogus")
    err = info.value
    assert err.code == "unknown_policy"
    assert err.message.startswith("--policies: ")
    assert "bogus" in err.message
    for allowed in ("independent", "semaphore", "fifo", "limit", "sjf", "edf"):
        assert allowed in err.message
    assert "\n" not in err.message


def test_parse_policies_refuses_duplicates(core) -> None:
    with pytest.raises(LanesError) as info:
        parse_policies("fifo,sjf,fifo")
    assert info.value.code == "bad_argument"
    assert "'fifo' is given twice" in info.value.message
