"""Flame graphs: lanes._core.flamegraph_svg / collapse_perf (inferno) and lanes.diagnose.flame.

The perf test records a real process. Without perf, or where the kernel refuses it, it skips
with the reason — unless LANES_REQUIRE_PROFILERS=1 (``make test`` sets it: its setup installs
perf), where a perf that is not installed fails instead.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from lanes import _core
from lanes.diagnose import flame
from lanes.diagnose.tools import discover

SVG = "{http://www.w3.org/2000/svg}"
TITLE = re.compile(r"^(?P<name>.*) \((?P<count>[\d,]+) (?P<unit>[^,]+), [\d.]+%\)$")

# py-spy's raw format: process and thread roots, then Python frames with their file and line;
# a bare count is samples with no Python frame.
PY_SPY = """\
process 4242:"python -m lanes serve";thread (0x7F01) MainThread;<module> (app.py:10);\
serve (app.py:40);handle (lanes/serving/app.py:88);dumps (json/__init__.py:231) 12
process 4242:"python -m lanes serve";thread (0x7F01) MainThread;<module> (app.py:10);\
serve (app.py:40);poll (selectors.py:468) 40
process 4242:"python -m lanes serve";thread (0x7F02) worker & co;run (worker.py:3) 7
 5
"""


def frames(svg: str) -> dict[str, dict[str, object]]:
    """Each frame of a flame graph SVG: ``{name: {count, unit, y, fill}}`` (the SVG must parse
    as XML)."""
    root = ET.fromstring(svg)
    out: dict[str, dict[str, object]] = {}
    for group in root.iter(f"{SVG}g"):
        title, rect = group.find(f"{SVG}title"), group.find(f"{SVG}rect")
        if title is None or rect is None or title.text is None:
            continue
        m = TITLE.match(title.text)
        assert m is not None, title.text
        out[m["name"]] = {
            "count": int(m["count"].replace(",", "")),
            "unit": m["unit"],
            "y": float(rect.attrib["y"]),
            "fill": rect.attrib["fill"],
        }
    return out


def rgb(fill: object) -> tuple[int, ...]:
    m = re.fullmatch(r"rgb\((\d+),(\d+),(\d+)\)", str(fill))
    assert m is not None, fill
    return tuple(int(v) for v in m.groups())


def test_py_spy_folded_renders_every_frame() -> None:
    svg = _core.flamegraph_svg(PY_SPY, title="on-CPU <serve>")
    got = frames(svg)
    assert got["all"]["count"] == 59
    assert got["handle (lanes/serving/app.py:88)"]["count"] == 12
    assert got["poll (selectors.py:468)"]["count"] == 40
    assert got["<module> (app.py:10)"]["count"] == 52
    assert got["thread (0x7F02) worker & co"]["unit"] == "samples"
    # root at the bottom: deeper frames are drawn higher up (smaller y)
    assert got["dumps (json/__init__.py:231)"]["y"] < got["<module> (app.py:10)"]["y"]
    title = ET.fromstring(svg).find(f".//{SVG}text[@id='title']")
    assert title is not None and title.text == "on-CPU <serve>"


def test_same_input_same_picture() -> None:
    assert _core.flamegraph_svg(PY_SPY, title="t") == _core.flamegraph_svg(PY_SPY, title="t")


def test_reverse_puts_the_leaves_at_the_root() -> None:
    got = frames(_core.flamegraph_svg("main;a;leaf 5\n", title="t", reverse=True))
    assert got["leaf"]["y"] > got["a"]["y"] > got["main"]["y"]


def test_palette_and_count_name() -> None:
    got = frames(_core.flamegraph_svg(PY_SPY, title="t", count_name="waits", colors="io"))
    assert {f["unit"] for f in got.values()} == {"waits"}
    for name, frame in got.items():
        if name != "all":
            r, g, b = rgb(frame["fill"])
            assert b > r and b > g, (name, frame["fill"])
    with pytest.raises(ValueError, match="unknown color palette: purpl"):
        _core.flamegraph_svg(PY_SPY, title="t", colors="purpl")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no stacks"),
        ("\n\n# only a comment\n", "no stacks"),
        ("main;a 3\nmain;b\n", r'line 2: no sample count after the stack: "main;b"'),
        ("main;a 3\n\nmain;b x7\n", r'line 3: sample count "x7" is not a whole number'),
        ("main;a 1.5\n", r'line 1: sample count "1\.5" is not a whole number'),
        ("lonely\n", r'line 1: no sample count after the stack: "lonely"'),
        (" 4\n 2\n", "no stacks"),
        ("main;a 0\nmain;b 0\n", "all 2 stacks have a count of 0"),
    ],
)
def test_bad_folded_input_raises_value_error(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _core.flamegraph_svg(text, title="t")


def test_long_bad_line_is_cut_in_the_message() -> None:
    with pytest.raises(ValueError, match=r"line 1: .*…$") as err:
        _core.flamegraph_svg("f;" * 500 + "x\n", title="t")
    assert len(str(err.value)) < 200


def test_collapse_perf_rejects_text_without_stacks() -> None:
    with pytest.raises(ValueError, match="empty input"):
        _core.collapse_perf("  \n")
    with pytest.raises(ValueError, match="no stacks found"):
        _core.collapse_perf("this is not perf script output\n")


def test_rendering_releases_the_gil() -> None:
    # 600 distinct stacks 200 frames deep: a few hundred milliseconds of layout and SVG.
    big = "".join(
        ";".join(f"f{(i * 7 + k) % 5000}" for k in range(200)) + f" {i % 7 + 1}\n"
        for i in range(600)
    )
    ticks = 0
    done = threading.Event()

    def render() -> None:
        _core.flamegraph_svg(big, title="big")
        done.set()

    thread = threading.Thread(target=render)
    start = time.perf_counter()
    thread.start()
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    thread.join()
    elapsed = time.perf_counter() - start
    # With the GIL held for the whole render this loop could not run at all meanwhile.
    assert elapsed < 0.05 or ticks > 10, (elapsed, ticks)


def test_render_writes_the_svg(tmp_path: Path) -> None:
    folded = tmp_path / "oncpu.folded"
    folded.write_text(PY_SPY)
    out = flame.render(folded, tmp_path / "oncpu.svg", "on-CPU, pid 4242")
    assert out == tmp_path / "oncpu.svg"
    got = frames(out.read_text())
    assert got["poll (selectors.py:468)"]["unit"] == "samples"
    assert {p.name for p in tmp_path.iterdir()} == {"oncpu.folded", "oncpu.svg"}


def test_render_offcpu_is_blue_with_its_unit(tmp_path: Path) -> None:
    folded = tmp_path / "offcpu.folded"
    folded.write_text(PY_SPY)
    got = frames(flame.render(folded, tmp_path / "offcpu.svg", "off", offcpu=True).read_text())
    assert got["poll (selectors.py:468)"]["unit"] == "samples off-CPU"
    r, g, b = rgb(got["poll (selectors.py:468)"]["fill"])
    assert b > r and b > g


def test_render_names_the_file_and_line_and_writes_nothing(tmp_path: Path) -> None:
    folded = tmp_path / "bad.folded"
    folded.write_text("main;a 3\nmain;b three\n")
    with pytest.raises(ValueError, match=r"bad\.folded: folded stacks, line 2: "):
        flame.render(folded, tmp_path / "bad.svg", "t")
    assert not (tmp_path / "bad.svg").exists()


def test_top_frames_is_leaf_self_time() -> None:
    assert flame.top_frames(PY_SPY, 2) == [
        ("poll (selectors.py:468)", 40),
        ("dumps (json/__init__.py:231)", 12),
    ]
    text = "a;b 3\nc;b 2\na 4\n# note\nbroken line\nz;q 0\nx;y 4\n"
    assert flame.top_frames(text, 10) == [("b", 5), ("a", 4), ("y", 4)]
    assert flame.top_frames(text, 0) == []
    assert flame.top_frames("", 3) == []


# ------------------------------------------------------------------------------- real perf

BUSY = """\
import ctypes, time
ctypes.CDLL(None).prctl(15, b"lanes-busy", 0, 0, 0)  # PR_SET_NAME: the root frame
end = time.process_time() + 0.6
n = 0
while time.process_time() < end:
    n = (n * 31 + 7) % 1000003
"""


def _perf() -> str:
    perf = discover()["perf"]
    if perf.path is not None:
        return perf.path
    assert perf.why_not is not None
    if os.environ.get("LANES_REQUIRE_PROFILERS") == "1" and "not installed" in perf.why_not:
        pytest.fail(f"LANES_REQUIRE_PROFILERS=1 and {perf.why_not}")
    pytest.skip(perf.why_not)


def test_perf_record_collapsed_and_rendered(tmp_path: Path) -> None:
    perf = _perf()
    data = tmp_path / "perf.data"
    record = [perf, "record", "-e", "cpu-clock", "-F", "499", "-g", "-o", str(data)]
    subprocess.run(
        [*record, "--", sys.executable, "-c", BUSY],
        check=True,
        capture_output=True,
        timeout=60,
    )
    script = subprocess.run(
        [perf, "script", "-i", str(data)], check=True, capture_output=True, text=True, timeout=60
    ).stdout
    folded = _core.collapse_perf(script)
    lines = folded.splitlines()
    busy = [line for line in lines if line.startswith("lanes-busy;")]
    assert busy, lines[:5]
    # cpu-clock periods are nanoseconds: the busy loop's 0.6 s of CPU, give or take the sampling
    busy_ns = sum(int(line.rsplit(" ", 1)[1]) for line in busy)
    assert 0.3e9 < busy_ns < 1.2e9, busy_ns
    assert any(line.count(";") >= 2 for line in busy), "no call chains: was -g honoured?"

    (tmp_path / "oncpu.folded").write_text(folded)
    svg = flame.render(tmp_path / "oncpu.folded", tmp_path / "oncpu.svg", "perf: lanes-busy")
    got = frames(svg.read_text())
    assert got["lanes-busy"]["count"] == busy_ns
    leaf, _ = flame.top_frames("\n".join(busy), 1)[0]
    assert leaf in got
