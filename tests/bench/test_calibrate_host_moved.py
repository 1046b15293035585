"""``bench/calibrate/host_moved.py``: a scenario file judged on a grid's lowest level says
whether the host has moved since the file was read. The committed grids of two host states stand
in for a light grid: 2026-11-29 (rounds 21-24) and 2026-12-02 (rounds 26-27), each with the file
read off it."""

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
RESULTS = ROOT / "docs/results/calibration"
NOW = ROOT / "examples/scenarios/cpu-2core.toml"
NOW_REFERENCE = RESULTS / "round27/grid-seed157"
THEN = RESULTS / "round26/scenarios/committed.toml"
THEN_REFERENCE = RESULTS / "round21/grid-seed1"
WINDOWS = 40


@pytest.fixture
def hm(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    monkeypatch.syspath_prepend(str(CALIBRATE))
    return importlib.import_module("host_moved")


@pytest.mark.parametrize(
    ("scenario", "reference", "grid", "holds"),
    [
        (NOW, NOW_REFERENCE, "round27/grid-seed167", True),  # the hour after it was read
        (NOW, NOW_REFERENCE, "round22/grid-seed53", False),  # 2026-11-29
        (THEN, THEN_REFERENCE, "round22/grid-seed89", True),  # its own day
        (THEN, THEN_REFERENCE, "round26/grid-seed137", False),  # 2026-12-02
    ],
)
def test_each_file_holds_on_its_own_day_and_not_on_the_other(hm, scenario, reference, grid, holds):
    verdict, level = hm.judge([RESULTS / grid], Scenario.load(scenario), reference, WINDOWS)
    assert verdict.holds is holds
    assert verdict.figures == 8  # p50 and p99 of four variants
    assert verdict.rate_rps == 200
    assert (verdict.met >= 6) is holds
    assert len(verdict.errors) == 8 and all(abs(e) < 100 for e in verdict.errors.values())
    # the level's table alone: one row per variant
    assert level.count("| 200 |") == 4


def test_the_keys_of_the_reference_against_itself(hm):
    here = hm.host_keys([NOW_REFERENCE])
    assert 0 < here.others_cores < 1
    assert 0 < here.server_ms_per_request < 2
    assert 0 < here.hold_p90_ms < 5
    assert 0 < here.preempt_per_ms < 1
    # 2026-12-02's neighbours took more of the host than 2026-11-29's (round 27)
    assert hm.host_keys([THEN_REFERENCE]).others_cores < here.others_cores


def test_two_grids_pool_their_repeats(hm):
    scenario = Scenario.load(NOW)
    one, _ = hm.judge([RESULTS / "round27/grid-seed167"], scenario, NOW_REFERENCE, WINDOWS)
    two, level = hm.judge(
        [RESULTS / "round27/grid-seed167", RESULTS / "round27/grid-seed173"],
        scenario,
        NOW_REFERENCE,
        WINDOWS,
    )
    assert two.holds and two.figures == 8
    assert two.hour_speed != one.hour_speed  # read off both grids' calls
    # the lab's means are over both grids' repeats, so the errors are not one grid's
    assert two.errors.keys() == one.errors.keys() and two.errors != one.errors
    assert level.count("| 200 |") == 4


def test_the_exit_status_and_the_report(hm, tmp_path, capsys):
    out = tmp_path / "verdict.json"
    md = tmp_path / "report.md"
    args = ["--windows", str(WINDOWS), "--json", str(out), "--markdown", str(md)]
    assert hm.main([str(RESULTS / "round27/grid-seed167"), *args]) == 0
    text = capsys.readouterr().out
    assert "the file holds" in text and "| hour speed (calls' CPU) |" in text
    assert md.read_text() == text
    assert json.loads(out.read_text())["holds"] is True
    moved = [str(RESULTS / "round26/grid-seed137"), "--scenario", str(THEN)]
    moved += ["--reference", str(THEN_REFERENCE), "--windows", str(WINDOWS)]
    assert hm.main(moved) == 1
    assert "the host has moved; read the file again" in capsys.readouterr().out


def test_wrong_input_names_the_problem(hm, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        hm.main([str(tmp_path / "nowhere")])
    assert exit_.value.code == 2
    assert "nowhere: not a grid folder" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        hm.main([str(NOW_REFERENCE), "--windows", "0"])
    assert "--windows 0: must be at least 1" in capsys.readouterr().err
    # a grid without its timelines: the message says what to run
    bare = tmp_path / "bare"
    shutil.copytree(NOW_REFERENCE / "runs", bare / "runs")
    with pytest.raises(SystemExit) as exit_:
        hm.main([str(bare)])
    assert "timelines.json is missing (run timelines.py on the grid)" in str(exit_.value.code)
    # a folder of other variants' runs
    alien = tmp_path / "alien" / "runs" / "mystery"
    alien.mkdir(parents=True)
    for path in (NOW_REFERENCE / "runs" / "fifo").glob("L*-r*.json"):
        run = json.loads(path.read_text()) | {"variant": "mystery"}
        (alien / path.name).write_text(json.dumps(run))
    alien = alien.parents[1]
    with pytest.raises(SystemExit) as exit_:
        hm.main([str(alien)])
    assert "holds no runs of independent, fifo, sjf, default" in str(exit_.value.code)
    # grids whose lowest levels differ are not pooled
    other = tmp_path / "other"
    shutil.copytree(NOW_REFERENCE, other)
    for path in other.glob("runs/*/L0-r*.json"):
        path.unlink()
    with pytest.raises(SystemExit) as exit_:
        hm.main([str(NOW_REFERENCE), str(other)])
    assert "the grids' lowest levels differ ([200.0, 400.0] req/s)" in str(exit_.value.code)
