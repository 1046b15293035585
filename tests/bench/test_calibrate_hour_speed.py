"""``bench/calibrate/hour_speed.py`` and ``against_demo.py --hour-speed``: a scenario scaled to
the hour its grid ran in, read off the calls' CPU at the lightest level against the grid the
scenario was read off (round 21's seed-1 grid, committed, stands in for both)."""

from __future__ import annotations

import importlib
import json
import shutil
import types
from pathlib import Path

import pytest

from lanes.sim.scenario import Scenario

ROOT = Path(__file__).resolve().parents[2]
CALIBRATE = ROOT / "bench" / "calibrate"
REFERENCE = ROOT / "docs/results/calibration/round21/grid-seed1"
SCENARIO = ROOT / "examples/scenarios/cpu-2core.toml"


@pytest.fixture
def hs(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    monkeypatch.syspath_prepend(str(CALIBRATE))
    return importlib.import_module("hour_speed")


def slower(
    tmp_path: Path, factor: float, levels: tuple[str, ...], reference: Path = REFERENCE
) -> Path:
    """A copy of the reference grid whose fifo and sjf calls at the levels (``L0``...) took
    ``factor`` x the CPU."""
    grid = tmp_path / f"grid-{factor}-{'-'.join(levels)}"
    for variant in ("fifo", "sjf"):
        shutil.copytree(reference / "runs" / variant, grid / "runs" / variant)
    timelines = json.loads((reference / "timelines.json").read_text())
    for run_id, run in timelines.items():
        if run_id.split("/")[1].split("-")[0] in levels:
            for sizes in run["models"].values():
                for got in sizes.values():
                    got["cpu_mean_ms"] *= factor
    (grid / "timelines.json").write_text(json.dumps(timelines))
    return grid


def test_the_reference_against_itself_is_one(hs):
    assert hs.hour_speed([REFERENCE], REFERENCE) == pytest.approx(1.0)
    assert hs.hour_speed([REFERENCE], REFERENCE, "all") == pytest.approx(1.0)


def test_the_hour_is_read_at_the_lightest_level(hs, tmp_path):
    light = slower(tmp_path, 1.2, ("L0",))
    assert hs.hour_speed([light], REFERENCE) == pytest.approx(1.2)
    # every level enters with "all": slower than the reference, but less than 1.2
    assert 1.0 < hs.hour_speed([light], REFERENCE, "all") < 1.2
    knee = slower(tmp_path, 1.3, ("L3", "L4"))
    assert hs.hour_speed([knee], REFERENCE) == pytest.approx(1.0)
    # two grids pool their calls: between the two
    assert 1.0 < hs.hour_speed([light, REFERENCE], REFERENCE) < 1.2


def test_each_level_gets_its_own_factor(hs, tmp_path):
    """``levels="each"``: a level whose calls ran 1.3x dearer gets 1.3, the others 1, keyed by
    the offered rate; the reference against itself is 1 at every rate."""
    rates = sorted(hs.hour_speeds([REFERENCE], REFERENCE))
    assert len(rates) >= 3
    assert all(f == pytest.approx(1.0) for f in hs.hour_speeds([REFERENCE], REFERENCE).values())
    knee = slower(tmp_path, 1.3, ("L3",))
    each = hs.hour_speeds([knee], REFERENCE)
    assert sorted(each) == rates
    assert each[rates[3]] == pytest.approx(1.3)
    assert all(each[r] == pytest.approx(1.0) for r in rates if r != rates[3])


def test_against_demo_scales_each_level_by_its_own_factor(monkeypatch, tmp_path):
    """Only the level whose calls ran dearer is predicted slower."""
    monkeypatch.syspath_prepend(str(CALIBRATE))
    against = importlib.import_module("against_demo")
    grid = slower(tmp_path, 1.5, ("L1",))
    base = [str(grid), "--grid", "--seeds", "1", "--requests", "3000"]
    each, plain = tmp_path / "each.md", tmp_path / "plain.md"
    argv = [*base, "--hour-speed", str(REFERENCE), "--hour-levels", "each"]
    assert against.main([*argv, "--markdown", str(each)]) == 0
    assert against.main([*base, "--markdown", str(plain)]) == 0
    assert "its calls scaled level by level (" in each.read_text()

    def p50s(md: Path) -> list[float]:
        rows = [line for line in md.read_text().splitlines() if line.startswith("| fifo | ")]
        return [float(r.split("|")[3].split("/")[1]) for r in rows]

    got, ref = p50s(each), p50s(plain)
    assert got[0] == pytest.approx(ref[0])  # the lightest level: as it was
    assert got[1] > 1.2 * ref[1]  # the dearer level: its median follows


def test_the_hour_scales_the_calls_and_nothing_else(hs):
    base = Scenario.load(SCENARIO)
    slow = hs.at_hour(base, 1.25)
    for s, f in zip(base.services, slow.services, strict=True):
        assert f.gpu.mean_ms == pytest.approx(1.25 * s.gpu.mean_ms)
        assert f.pre == s.pre and f.post == s.post
        assert s.batching is not None and f.batching is not None
        for (n, ms), (m, got) in zip(s.batching.batch_ms, f.batching.batch_ms, strict=True):
            assert n == m and got == pytest.approx(1.25 * ms)
    assert slow.host == base.host


def test_a_grid_without_timelines_is_named(hs, tmp_path):
    (tmp_path / "runs" / "fifo").mkdir(parents=True)
    with pytest.raises(SystemExit) as info:
        hs.hour_speed([tmp_path], REFERENCE)
    assert "timelines.json is missing" in str(info.value)


def test_against_demo_scales_the_scenario_to_the_hour(monkeypatch, tmp_path, capsys):
    monkeypatch.syspath_prepend(str(CALIBRATE))
    against = importlib.import_module("against_demo")
    grid = slower(tmp_path, 1.5, ("L0",))
    out = tmp_path / "t.md"
    argv = [str(grid), "--grid", "--seeds", "1", "--requests", "3000", "--markdown", str(out)]
    assert against.main([*argv, "--hour-speed", str(REFERENCE)]) == 0
    text = out.read_text()
    assert "its calls x1.500 (the hour's speed at the lightest level(s) against" in text
    plain = tmp_path / "plain.md"
    assert against.main([*argv[:-1], str(plain)]) == 0

    def p50(md: Path) -> float:
        row = next(line for line in md.read_text().splitlines() if line.startswith("| fifo | 600"))
        return float(row.split("|")[3].split("/")[1])

    assert p50(out) > 1.2 * p50(plain)  # every call 1.5x dearer: the median follows
    with pytest.raises(SystemExit) as info:
        against.main([str(REFERENCE), "--hour-speed", str(REFERENCE)])
    assert info.value.code == 2
    assert "--hour-speed needs --grid" in capsys.readouterr().err


def test_default_question_asks_at_the_hour(monkeypatch, tmp_path, capsys):
    monkeypatch.syspath_prepend(str(CALIBRATE))
    dq = importlib.import_module("default_question")
    small = ["--seeds", "1", "--requests", "2000", "--burst-requests", "3000"]
    # the default reference: the grid cpu-2core.toml was read off
    grid = slower(tmp_path, 1.5, ("L0",), dq.DEFAULT_REFERENCE)
    plain, slow = tmp_path / "plain.md", tmp_path / "slow.md"
    assert dq.main([*small, "--markdown", str(plain)]) == 0
    assert dq.main([*small, "--hour-speed", str(grid), "--markdown", str(slow)]) == 0
    heading = f"its calls x1.500 (the hour's speed of {grid} against {dq.DEFAULT_REFERENCE})"
    assert heading in slow.read_text()
    assert "x1.500" not in plain.read_text()

    def capacity(md: Path) -> float:
        """today's default's (sjf's) steady capacity, req/s: the first figure of its row"""
        row = next(line for line in md.read_text().splitlines() if line.startswith("| `sjf` |"))
        return float(row.split("|")[2].replace(",", "").split()[0])

    assert capacity(slow) < 0.8 * capacity(plain)  # every call 1.5x dearer
    with pytest.raises(SystemExit) as info:
        dq.main(["--reference", str(REFERENCE)])
    assert info.value.code == 2
    assert "--reference needs --hour-speed" in capsys.readouterr().err
    own = tmp_path / "own.toml"
    own.write_text(SCENARIO.read_text())
    with pytest.raises(SystemExit) as info:
        dq.main(["--scenario", str(own), "--hour-speed", str(grid)])
    assert "needs --reference GRID" in capsys.readouterr().err
