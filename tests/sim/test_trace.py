"""Trace files: plain seconds and CSV (numbers or date-times), and the real Azure trace."""

import itertools
from pathlib import Path

import pytest

from lanes.errors import LanesError
from lanes.sim import load_trace, parse_trace
from lanes.sim.trace import TraceFormatError

REPO = Path(__file__).resolve().parents[2]
AZURE_CODE = REPO.parent / "shared" / "data" / "azure-llm-inference-2023" / "code.csv"

AZURE_HEAD = """\
TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:17:03.9799600,4808,10
2023-11-16 18:17:04.0319600,3180,8
2023-11-16 18:17:04.0781490,110,27
"""

VALID = [
    ("plain", "0\n1.5\n3\n", [0.0, 1.5, 3.0]),
    ("plain offset", "100\n101\n", [0.0, 1.0]),
    ("plain negative", "-2\n0\n", [0.0, 2.0]),
    ("plain exponent", "1e3\n1.001e3\n", [0.0, pytest.approx(1.0)]),
    ("plain unsorted", "3\n1\n2\n", [0.0, 1.0, 2.0]),
    ("plain comments", "# arrivals\n\n  1 # first\n2\n\n# end\n", [0.0, 1.0]),
    ("plain crlf", "1\r\n2\r\n", [0.0, 1.0]),
    ("csv seconds", "t,size\n10,5\n10.25,7\n", [0.0, 0.25]),
    ("csv one column", "time\n5\n6\n", [0.0, 1.0]),
    ("csv quoted", 'time,x\n"5","a"\n"7","b"\n', [0.0, 2.0]),
    ("csv blank lines", "time\n\n5\n\n6\n", [0.0, 1.0]),
    ("azure date-times", AZURE_HEAD, [0.0, 0.052, 0.098189]),
    ("T separator", "ts\n2023-01-01T00:00:00\n2023-01-01T00:00:01.5\n", [0.0, 1.5]),
    ("no fraction", "ts\n2023-01-01 00:00:00\n2023-01-01 00:01:00\n", [0.0, 60.0]),
    ("utc suffix", "ts\n2023-01-01 00:00:00Z\n2023-01-01 00:00:02Z\n", [0.0, 2.0]),
    ("across midnight", "ts\n2023-12-31 23:59:59.5\n2024-01-01 00:00:00.25\n", [0.0, 0.75]),
    ("nanoseconds kept", "ts\n2023-01-01 00:00:00.000000001\n2023-01-01 00:00:00.000000003\n",
     [0.0, 2e-9]),
    ("beyond nanoseconds cut", "ts\n2023-01-01 00:00:00.0000000019\n2023-01-01 00:00:01\n",
     [0.0, 0.999999999]),
]  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in VALID], ids=[c[0] for c in VALID])
def test_parse(text: str, expected: list[float]) -> None:
    times = parse_trace(text)
    assert isinstance(times, tuple)
    assert all(type(t) is float for t in times)
    assert list(times) == expected


def test_date_times_keep_sub_microsecond_precision() -> None:
    # 2023 in float seconds since 1970 would round these 100 ns apart stamps together.
    text = "ts\n2023-11-16 18:17:03.9799600\n2023-11-16 18:17:03.9799601\n"
    assert parse_trace(text) == (0.0, pytest.approx(1e-7, rel=1e-6))


INVALID = [
    ("empty", "", "no timestamps"),
    ("only comments", "# nothing\n\n", "no timestamps"),
    ("one timestamp", "5\n", "needs at least 2"),
    ("csv header only", "time,x\n", "needs at least 2"),
    ("all equal", "5\n5\n", "positive time span"),
    ("bad plain line", "1\n2\nsoon\n", "line 3: 'soon' is not a number of seconds"),
    ("infinite", "1\ninf\n", "line 2: 'inf' is not a number"),
    ("bad csv row", "time\n1\nsoon\n", "line 3: 'soon' is not a number of seconds, like the rows"),
    ("bad first csv row", "time\nsoon\n", "line 2: 'soon' is not a number of seconds or a date"),
    ("bad date", "ts\n2023-13-01 00:00:00\n", "line 2: '2023-13-01 00:00:00' is not"),
    ("date then number", "ts\n2023-01-01 00:00:00\n5\n", "line 3: '5' is not a date-time, like"),
    ("number then date", "ts\n5\n2023-01-01 00:00:00\n", "line 3: '2023-01-01 00:00:00' is not a"),
    ("time zone offset", "ts\n2023-01-01 00:00:00+02:00\n", "line 2"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "needle"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_parse_refuses(text: str, needle: str) -> None:
    with pytest.raises(TraceFormatError) as info:
        parse_trace(text)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


def test_load_trace_file(tmp_path: Path) -> None:
    path = tmp_path / "arrivals.csv"
    path.write_text(AZURE_HEAD)
    assert load_trace(path) == (0.0, 0.052, 0.098189)


@pytest.mark.parametrize(
    ("content", "needle"),
    [(None, "No such file"), (b"1\n2\nx\n", "line 3"), (b"\xff\xfe1\n", "utf-8")],
    ids=["missing", "bad line", "binary"],
)
def test_load_trace_errors(tmp_path: Path, content: bytes | None, needle: str) -> None:
    path = tmp_path / "arrivals.txt"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(LanesError) as info:
        load_trace(path)
    assert info.value.code == "trace_invalid"
    assert info.value.message.startswith(f"trace {path}: ")
    assert needle in info.value.message


@pytest.mark.skipif(not AZURE_CODE.exists(), reason=f"Azure trace not present at {AZURE_CODE}")
def test_the_real_azure_code_trace() -> None:
    times = load_trace(AZURE_CODE)
    rows = len(AZURE_CODE.read_text().strip().splitlines()) - 1
    assert len(times) == rows > 8000
    assert times[0] == 0.0
    assert all(a <= b for a, b in itertools.pairwise(times))
    assert 3000 < times[-1] < 4000  # about an hour
    assert times[1] == pytest.approx(0.052)  # 18:17:03.9799600 -> 18:17:04.0319600
