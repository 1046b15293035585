"""``bench/calibrate/scenario_file.py``: a scenario written back as ``lanes sim`` TOML reads back
as the same scenario, and a failed write leaves nothing behind; ``against_demo.py --grid`` sets
such a file as it is against a calibration grid."""

from __future__ import annotations

import importlib
import json
import types
from dataclasses import replace
from pathlib import Path

import pytest

from lanes.sim.scenario import Scenario, Trace, builtin_scenarios

ROOT = Path(__file__).resolve().parents[2]
CALIBRATE = ROOT / "bench" / "calibrate"
SCENARIOS = [
    *builtin_scenarios(),
    *sorted(str(p) for p in (ROOT / "examples" / "scenarios").glob("*.toml")),
]


@pytest.fixture
def sf(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    monkeypatch.syspath_prepend(str(CALIBRATE))
    return importlib.import_module("scenario_file")


def comparable(s: Scenario) -> Scenario:
    """``s`` without where it was loaded from: its source and its traces' spelling of a path."""
    services = tuple(
        replace(x, arrival=replace(x.arrival, path=x.arrival.path.resolve()))
        if isinstance(x.arrival, Trace)
        else x
        for x in s.services
    )
    return replace(s, source="", services=services)


@pytest.mark.parametrize("name", SCENARIOS, ids=lambda n: Path(n).stem)
def test_a_scenario_written_reads_back_the_same(sf, tmp_path, name):
    original = Scenario.load(name)
    path = tmp_path / "deeper" / "written.toml"
    path.parent.mkdir()
    sf.write(path, original, "read off a grid\nsecond line")
    text = path.read_text()
    assert text.startswith("# read off a grid\n# second line\n")
    assert comparable(Scenario.load(path)) == comparable(original)


def test_a_changed_figure_is_written(sf, tmp_path):
    base = Scenario.load(ROOT / "examples/scenarios/cpu-2core.toml")
    changed = replace(base, host=replace(base.host, call_preempt_absorbed=True, busy_cores=0.2))
    sf.write(tmp_path / "s.toml", changed)
    back = Scenario.load(tmp_path / "s.toml")
    assert back.host.call_preempt_absorbed and back.host.busy_cores == 0.2
    assert back != replace(base, source=back.source)


def test_a_failed_write_leaves_nothing_behind(sf, tmp_path):
    scenario = Scenario.load("ocr")
    (tmp_path / "taken").mkdir()  # a folder where the file should go: the rename fails
    with pytest.raises(OSError):
        sf.write(tmp_path / "taken", scenario)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
    assert not any((tmp_path / "taken").iterdir())


def test_a_scenario_file_is_set_as_it_is_against_a_grid(monkeypatch, tmp_path, capsys):
    # round 19's committed grid (fifo, sjf, independent and the default) against cpu-2core.toml
    monkeypatch.syspath_prepend(str(CALIBRATE))
    against = importlib.import_module("against_demo")
    grid = ROOT / "docs/results/calibration/round19/grid"
    out = tmp_path / "t.md"
    scenario = str(ROOT / "examples/scenarios/cpu-2core.toml")
    argv = [str(grid), "--grid", "--scenario", scenario, "--seeds", "1", "--requests", "3000"]
    assert against.main([*argv, "--markdown", str(out)]) == 0
    text = out.read_text()
    for variant in ("independent", "fifo", "sjf", "default"):
        assert f"| {variant} |" in text, variant
    assert "independent as independent x1" in text
    assert "below the knee (measured goodput >= 90% of the offer):" in text
    # up to the lab's capacity at SLO: each variant's levels a prefix of the goodput rule's
    capped = tmp_path / "c.md"
    assert against.main([*argv, "--knee", "capacity", "--markdown", str(capped)]) == 0
    c_text = capped.read_text()
    assert "up to the lab's capacity at SLO" in c_text

    def levels(md: str) -> dict[str, str]:
        return {
            line[2:].split(" (")[0]: line.split("(")[1].split(" req/s")[0]
            for line in md.splitlines()
            if line.startswith("- ")
        }

    loose, strict = levels(text), levels(c_text)
    assert strict and set(strict) <= set(loose)
    assert all(loose[v].startswith(strict[v]) for v in strict)
    assert any(loose[v] != strict.get(v) for v in loose)  # round 19's grid reaches past the SLO
    # a folder with none of the grid's variants' runs (a demo's) is refused, by name
    (tmp_path / "runs" / "independent-gpu-like").mkdir(parents=True)
    run = tmp_path / "runs" / "independent-gpu-like" / "L0-r1.json"
    run.write_text('{"variant": "independent-gpu-like"}')
    with pytest.raises(SystemExit) as info:
        against.main([str(tmp_path), "--grid"])
    assert info.value.code == 2
    assert "holds no runs" in capsys.readouterr().err


def test_several_grids_pool_their_runs(monkeypatch, tmp_path):
    # round 21's two grids (seeds 1 and 11): a level's measured figure is the mean over both
    # grids' repeats, and the range spans both
    monkeypatch.syspath_prepend(str(CALIBRATE))
    against = importlib.import_module("against_demo")
    grids = [ROOT / f"docs/results/calibration/round21/grid-seed{s}" for s in (1, 11)]
    p99s = [
        json.loads(f.read_text())["load"]["latency_ms"]["p99"]
        for g in grids
        for f in sorted((g / "runs" / "fifo").glob("L2-r*.json"))
    ]
    assert len(p99s) == 6
    out = tmp_path / "t.md"
    argv = [*map(str, grids), "--grid", "--seeds", "1", "--requests", "3000"]
    assert against.main([*argv, "--markdown", str(out)]) == 0
    text = out.read_text()
    assert f"against {grids[0]}, {grids[1]}:" in text
    row = next(line for line in text.splitlines() if line.startswith("| fifo | 600 |"))
    p99_cell = row.split("|")[5].strip()
    mean = sum(p99s) / len(p99s)
    assert p99_cell.startswith(f"{mean:.1f} [{min(p99s):.1f}-{max(p99s):.1f}]"), p99_cell


def test_floats_are_written_to_ten_digits(sf, tmp_path):
    base = Scenario.load("ocr")
    first = base.services[0]
    odd = replace(first, gpu=replace(first.gpu, mean_ms=0.5186999999999999))
    scenario = replace(base, services=(odd, *base.services[1:]))
    sf.write(tmp_path / "s.toml", scenario)
    assert "mean_ms = 0.5187," in (tmp_path / "s.toml").read_text()
    assert Scenario.load(tmp_path / "s.toml").services[0].gpu.mean_ms == 0.5187


def test_a_grid_without_its_disturbed_runs(monkeypatch, tmp_path):
    """``--without-disturbed``: the run the rest of the host disturbed (its ``other_cores``,
    lanes.lab.host_noise) leaves the measured mean; round 21's grid carries no reading, so a
    copy of one level is given one."""
    monkeypatch.syspath_prepend(str(CALIBRATE))
    against = importlib.import_module("against_demo")
    grid = tmp_path / "grid"
    runs = sorted((ROOT / "docs/results/calibration/round21/grid-seed1/runs/fifo").glob("L2-r*"))
    (grid / "runs" / "fifo").mkdir(parents=True)
    p99s = []
    for i, src in enumerate(p for p in runs if not p.name.endswith(".trace.json")):
        run = json.loads(src.read_text())
        run["server"]["other_cores"] = 0.5 if i == 0 else 0.01
        p99s.append(run["load"]["latency_ms"]["p99"])
        (grid / "runs" / "fifo" / src.name).write_text(json.dumps(run))
    out = tmp_path / "t.md"
    argv = [str(grid), "--grid", "--seeds", "1", "--requests", "3000", "--markdown", str(out)]
    assert against.main([*argv, "--without-disturbed"]) == 0
    text = out.read_text()
    assert f"against {grid} (without the 1 runs of {len(p99s)} the host disturbed):" in text
    row = next(line for line in text.splitlines() if line.startswith("| fifo | 600 |"))
    kept = p99s[1:]
    mean = sum(kept) / len(kept)
    assert row.split("|")[5].strip().startswith(f"{mean:.1f} [{min(kept):.1f}-{max(kept):.1f}]")


def test_windows_simulate_runs_as_long_as_the_labs(monkeypatch, tmp_path, capsys):
    """``--windows N``: each level is N simulated runs as long as the grid's windows (its runs'
    median ``measure_s``), their p99 the mean over them; N below 1 is refused by name."""
    monkeypatch.syspath_prepend(str(CALIBRATE))
    against = importlib.import_module("against_demo")
    compare = importlib.import_module("compare")
    sim = importlib.import_module("lanes.sim.runner")
    grid = ROOT / "docs/results/calibration/round21/grid-seed1"
    out = tmp_path / "t.md"
    argv = [str(grid), "--grid", "--windows", "4", "--markdown", str(out)]
    assert against.main(argv) == 0
    assert "; 4 windows of 5 s" in out.read_text()
    # the rule: rate x window / (1 - the warm-up share) arrivals a window, seeds 1..N, the mean
    scenario = Scenario.load(ROOT / "examples/scenarios/cpu-2core.toml")
    rate = 600.0
    got = compare.predicted(scenario, ["fifo"], [rate], 4, 40_000, window_s=5.0)
    load = rate / compare.scenario_rate(scenario)
    each = sim.run(scenario, ["fifo"], [load], seeds=[1, 2, 3, 4], requests=round(rate * 5 / 0.95))
    assert all(abs(p["requests"] - rate * 5) <= 1 for p in each.points)  # measured: 5 s
    mean = sum(p["latency_ms"]["p99"] for p in each.points) / 4
    assert got[("fifo", rate)]["p99"] == pytest.approx(mean)
    with pytest.raises(SystemExit) as info:
        against.main([str(grid), "--grid", "--windows", "0"])
    assert info.value.code == 2
    assert "--windows 0: must be at least 1" in capsys.readouterr().err


def test_slow_spells_of_seconds_make_slow_windows(monkeypatch):
    """A host whose speed changes over seconds (``host.speed_ms``) makes some windows slow near
    the knee, so their mean p99 is longer than a steady host's; over windows far shorter than a
    spell the spread between windows shows it."""
    monkeypatch.syspath_prepend(str(CALIBRATE))
    compare = importlib.import_module("compare")
    committed = Scenario.load(ROOT / "examples/scenarios/cpu-2core.toml")
    steady = replace(committed, host=replace(committed.host, speed_cv=0.0, speed_ms=0.0))
    spells = replace(steady, host=replace(steady.host, speed_cv=0.1, speed_ms=3000.0))
    rate = 850.0
    calm = compare.predicted(steady, ["fifo"], [rate], 24, 0, window_s=5.0)[("fifo", rate)]
    slow = compare.predicted(spells, ["fifo"], [rate], 24, 0, window_s=5.0)[("fifo", rate)]
    assert slow["p99"] > 1.2 * calm["p99"], (slow["p99"], calm["p99"])
