"""``bench/calibrate/neighbour.py``: a neighbour's cores over a run, read off lab grids.

Synthetic grids whose runs carry known ``server.other_cores`` check the rule (the median taken
off, floored at 0, the quantiles at both ends); a committed grid of this host gives points the
simulator accepts; the command line refuses a folder without runs."""

from __future__ import annotations

import importlib
import itertools
import json
import types
from pathlib import Path

import pytest

from lanes.sim.scenario import Scenario

ROOT = Path(__file__).resolve().parents[2]
CALIBRATE = ROOT / "bench" / "calibrate"
GRID = ROOT / "docs" / "results" / "calibration" / "round28" / "grid-seed179"


@pytest.fixture
def nb(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    monkeypatch.syspath_prepend(str(CALIBRATE))
    return importlib.import_module("neighbour")


def grid(root: Path, cores: list[float | None]) -> Path:
    d = root / "runs" / "fifo"
    d.mkdir(parents=True)
    for i, c in enumerate(cores):
        server = {} if c is None else {"other_cores": c}
        (d / f"L0-r{i + 1}.json").write_text(json.dumps({"server": server}))
        (d / f"L0-r{i + 1}.trace.json").write_text("{}")  # a timeline, not a run: skipped
    return root


def test_the_extra_is_beyond_the_median_run(nb, tmp_path):
    # 11 runs: a median of 0.02, one neighbour of 0.52; a run with no reading is skipped.
    cores = [0.0, 0.01, 0.01, 0.02, 0.02, 0.02, 0.02, 0.03, 0.03, 0.05, 0.52, None]
    points, runs, median = nb.busy_run_cores([grid(tmp_path / "g", cores)])
    assert runs == 11 and median == pytest.approx(0.02)
    assert [p for p, _ in points] == list(nb.PROBABILITIES)
    assert points[0] == (0.0, 0.0) and points[1] == (0.5, 0.0)
    assert points[-1] == (1.0, 0.5)
    assert all(b[1] >= a[1] for a, b in itertools.pairwise(points))


def test_grids_pool_and_the_points_make_a_scenario(nb, tmp_path):
    points, runs, _ = nb.busy_run_cores([GRID, GRID])
    assert runs == 2 * nb.busy_run_cores([GRID])[1]
    line = ", ".join(f"[{p}, {c}]" for p, c in points)
    text = (ROOT / "examples" / "scenarios" / "cpu-2core.toml").read_text()
    text = text.replace("busy_cores = ", f"busy_run_cores = [{line}]\nbusy_cores = ", 1)
    path = tmp_path / "s.toml"
    path.write_text(text)
    assert Scenario.load(path).host.busy_run_cores == tuple(points)


def test_the_command_line(nb, tmp_path, capsys):
    out = tmp_path / "n.json"
    assert nb.main([str(GRID), "--json", str(out)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("busy_run_cores = [[0.0, ")
    assert json.loads(out.read_text())["runs"] == 60
    assert nb.main([str(tmp_path)]) == 2
    assert "fewer than two runs" in capsys.readouterr().err
