"""``bench/calibrate/self_check.py``: each lab repeat against the mean of the others."""

from __future__ import annotations

import importlib
import json
import types
from pathlib import Path

import pytest

CALIBRATE = Path(__file__).resolve().parents[2] / "bench" / "calibrate"


@pytest.fixture
def sc(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """The script as a module (it imports compare.py from beside itself)."""
    monkeypatch.syspath_prepend(str(CALIBRATE))
    return importlib.import_module("self_check")


def test_leave_one_out_and_the_rule(sc):
    errs = sc.leave_one_out([1.0, 2.0, 3.0])  # against 2.5, 2.0, 1.5
    assert errs == pytest.approx([-0.6, 0.0, 1.0])
    assert sc.leave_one_out([5.0]) == []
    cell = sc.Cell((10.0, 10.0, 13.0))  # -13 %, -13 %, +30 %
    assert cell.hits == 2
    assert cell.spread == pytest.approx(1.3)
    assert sc.within(11.5, 10.0) and not sc.within(11.6, 10.0)


def test_interval_and_repeats(sc):
    # sd 1, mean 2, n 3: t(2) / sqrt(3) / 2, t(2) = 4.302653 (lanes.lab.aggregate's table)
    assert sc.ci_pct([1.0, 2.0, 3.0]) == pytest.approx(124.207, abs=1e-3)
    # cv 0.2: 9 repeats give 2.306 * 0.2 / 3 = 0.154, 10 give 0.143
    assert sc.repeats_needed(0.2) == 10
    assert sc.repeats_needed(0.0) == 2
    assert sc.repeats_needed(50.0) == sc.MAX_REPEATS + 1
    # cv 0.3 over 4 repeats: se 0.15; Phi(0.1765 / 0.15) - Phi(-0.1304 / 0.15)
    assert sc.perfect(0.3, 4) == pytest.approx(0.68803, abs=1e-5)
    assert sc.perfect(0.0, 3) == 1.0


def write_run(folder: Path, rate: float, repeat: int, p99: float, goodput: float, others: float):
    run = {
        "variant": "fifo",
        "offered": {"rate_rps": rate},
        "load": {"latency_ms": {"p50": 2.0, "p99": p99}, "goodput_rps": goodput},
        # others_cores: busy cores minus the server's (process_cpu_s / window_s = 0.5)
        "server": {
            "cpu_busy_per_core": [0.5 + others, 0.0],
            "process_cpu_s": 5.0,
            "window_s": 10.0,
        },
    }
    path = folder / "fifo" / f"L{int(rate)}-r{repeat}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(run))


def test_main_counts_below_the_knee(sc, tmp_path, capsys):
    for repeat, p99 in enumerate((10.0, 10.0, 13.0), start=1):
        write_run(tmp_path, 100.0, repeat, p99, 100.0, 0.1)
        write_run(tmp_path, 200.0, repeat, p99, 150.0, 0.1)  # 75 % of the offer: past the knee
    write_run(tmp_path, 100.0, 4, 100.0, 100.0, 1.0)  # a build beside it
    out = tmp_path / "self.md"
    assert sc.main([str(tmp_path), "--max-others", "0.3", "--markdown", str(out)]) == 0
    text = out.read_text()
    assert text in capsys.readouterr().out
    assert "| fifo | 100 | 3 |" in text
    assert "| fifo | 200 |" not in text
    assert "3/3 / 2/3 / 3/3 |" in text
    assert "- fifo (100 req/s): p50 +0 to +0 % (3/3 within 15%" in text
    assert "p99 -13 to +30 % (2/3 within 15%; per level 0.7/1" in text
    assert "in all 8/9 repeats, per level 2.7 of 3" in text
    # without the filter the fourth repeat counts: 10 against 41, 13 against 40, 100 against 11
    sc.main([str(tmp_path), "--markdown", str(out)])
    assert "| fifo | 100 | 4 |" in out.read_text()
    assert "p99 -76 to +809 % (0/4 within 15%" in out.read_text()


def test_one_grid_predicts_another(sc, tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    for repeat, p99 in enumerate((10.0, 12.0), start=1):  # mean 11
        write_run(a, 100.0, repeat, p99, 100.0, 0.1)
    for repeat, p99 in enumerate((12.0, 14.0, 13.0), start=1):  # mean 13: 11 is -15.4 %
        write_run(b, 100.0, repeat, p99, 100.0, 0.1)
    out = tmp_path / "across.md"
    assert sc.main([str(a), "--predicts", str(b), "--markdown", str(out)]) == 0
    text = out.read_text()
    assert f"the mean of {a} as the prediction for {b}" in text
    assert "p99 ms meas [repeats] / predicted |" in text and "/ sim |" not in text
    assert "| fifo | 100 |" in text and "13.0 [12.0-14.0] / 11.0 | -15 % |" in text
    # -15 % misses the target, but lies inside the 95 % CI of b's mean (13 ± 4.303 x 1 / sqrt 3)
    assert (
        "p99 -15 to -15 % (0/1 in range, 0/1 within 15%, 1/1 in the mean's 95% CI or within 15%)"
        in text
    )
    # a grid predicts itself to the digit
    sc.main([str(b), "--predicts", str(b), "--markdown", str(out)])
    assert "p99 +0 to +0 % (1/1 in range, 1/1 within 15%, 1/1 in the mean's" in out.read_text()
    # repeats that agree make a narrow interval: 11 is then outside it as well as 15 % off
    for repeat in (1, 2, 3):
        write_run(b, 100.0, repeat, 13.0 + 0.01 * repeat, 100.0, 0.1)
    sc.main([str(a), "--predicts", str(b), "--markdown", str(out)])
    assert "(0/1 in range, 0/1 within 15%, 0/1 in the mean's 95% CI or" in out.read_text()
    # a level the predicting grid did not run is refused, by name
    write_run(b, 200.0, 1, 20.0, 200.0, 0.1)
    with pytest.raises(SystemExit, match="ran no fifo at 200 req/s"):
        sc.main([str(a), "--predicts", str(b)])


def test_runs_the_host_disturbed_are_dropped_on_both_sides(sc, tmp_path, capsys):
    """``--without-disturbed``: a run whose ``other_cores`` (lanes.lab.host_noise) reaches 0.1
    is dropped from the predicting and the predicted grids; a run without the reading stays,
    and the heading says both."""
    a, b = tmp_path / "a", tmp_path / "b"
    for repeat, p99 in enumerate((10.0, 12.0), start=1):
        write_run(a, 100.0, repeat, p99, 100.0, 0.1)
    write_run(a, 100.0, 3, 50.0, 100.0, 0.1)  # a neighbour's build beside it
    for repeat, p99 in enumerate((11.0, 11.0), start=1):
        write_run(b, 100.0, repeat, p99, 100.0, 0.1)
    write_run(b, 100.0, 3, 80.0, 100.0, 0.1)
    for folder, noisy in ((a, 3), (b, 3)):
        for path in sorted((folder / "fifo").glob("*.json")):
            run = json.loads(path.read_text())
            quiet = path.name != f"L100-r{noisy}.json"
            run["server"]["other_cores"] = 0.02 if quiet else 0.1
            path.write_text(json.dumps(run))
    write_run(b, 100.0, 4, 11.0, 100.0, 0.1)  # a grid from before the reading: it stays
    out = tmp_path / "quiet.md"
    assert sc.main([str(a), "--predicts", str(b), "--markdown", str(out)]) == 0
    assert "28.2 [11.0-80.0] / 24.0 |" in out.read_text()  # the noisy runs count
    argv = [str(a), "--predicts", str(b), "--without-disturbed", "--markdown", str(out)]
    assert sc.main(argv) == 0
    text = out.read_text()
    assert "(without the 1 runs of 3 the host disturbed; without the 1 runs of 4 the host " in text
    assert "disturbed (1 carry no host-noise reading and stay))" in text
    assert "11.0 [11.0-11.0] / 11.0 | +0 % |" in text  # b's 11, 11, 11 against a's 10 and 12
