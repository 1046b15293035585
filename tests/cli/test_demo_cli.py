"""``lanes demo --sim --out DIR``: the simulated demo writes its report, summary.json and the
simulator's JSON into DIR (the real simulator; it takes seconds)."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from lanes.cli import main

POLICIES = ["independent", "fifo", "sjf"]
TIMES = "\N{MULTIPLICATION SIGN}"


@pytest.fixture(scope="module")
def sim_demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("demo") / "sim"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["demo", "--sim", "--out", str(out)]) == 0
    return out, printed.getvalue()


def test_writes_the_report_the_summary_and_the_points(sim_demo: tuple[Path, str]) -> None:
    out, printed = sim_demo
    names = {p.relative_to(out).as_posix() for p in out.rglob("*")}
    assert {"report.html", "summary.json", "sim.json"} <= names
    assert not [n for n in names if Path(n).name.startswith(".")]  # no temporary left
    assert f"summary: {out / 'summary.json'}" in printed


def test_the_summary_has_the_labs_shape(sim_demo: tuple[Path, str]) -> None:
    out, _ = sim_demo
    summary = json.loads((out / "summary.json").read_text())
    points = json.loads((out / "sim.json").read_text())
    assert summary["baseline"] == "independent"
    assert summary["slo_ms"] == 150.0
    assert list(summary["variants"]) == POLICIES
    per_load = points["points"][0]["offered_rps"] / points["points"][0]["load"]
    for policy, variant in summary["variants"].items():
        pooled = points["capacity"][policy]["overall"]
        assert variant["capacity_at_slo"] == pytest.approx(pooled * per_load)
        assert variant["capacity_unit"] == "rps"
        search = variant["capacity_search"]
        assert [r["repeat"] for r in search["repeats"]] == [1, 2]  # a seed is a repeat
        low, high = search["capacity_ci"]
        assert low <= search["capacity"] <= high
        assert search["resolution"] == pytest.approx(0.01 * per_load)  # the simulator's grid
        assert [lv["load"] for lv in variant["levels"]] == points["loads"]
        level = variant["levels"][-1]
        assert set(level["goodput_rps_by_repeat"]) == {"1", "2"}
        assert set(level["models"]) == {"cnn", "rnn_zh", "rnn_en"}
        assert set(level["latency_ms"]) == {"p50", "p99", "mean"}  # as the lab's levels
        assert level["latency_ms"]["p50"] <= level["latency_ms"]["p99"]
        assert all(m["mean_ms"] > 0 for m in level["models"].values())
        assert variant["every_model_capacity"]["capacity"] <= search["capacity"]
    ratios = summary["ratios"]["variants"]
    assert ratios["independent"]["capacity_search"]["ratio"] == pytest.approx(1.0)
    assert ratios["sjf"]["capacity_search"]["pairs"] == 2
    assert len(ratios["sjf"]["goodput"]) == len(points["loads"])


def test_the_report_shows_the_headline_offline(sim_demo: tuple[Path, str]) -> None:
    out, printed = sim_demo
    page = (out / "report.html").read_text()
    assert "<h2>Capacity at SLO</h2>" in page
    assert "vs independent" in page and "goodput vs independent at" in page
    assert not re.search(r"<(script|link|iframe)\b|https?://", page)
    assert "capacity at SLO (>= 99 % within 150 ms; 10 bisection steps)" in printed
    sjf = next(line for line in printed.splitlines() if line.startswith("│ sjf"))
    assert re.search(r"│ +\d+ rps( \[\d+, \d+\])? +│ +\+\d+\.\d+ rps +│ +\d\.\d\d" + TIMES, sjf)


def test_an_out_folder_that_cannot_be_made_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    assert main(["demo", "--sim", "--out", str(tmp_path / "a-file" / "sim")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot write there" in err[0]


def test_the_report_names_the_leaders(sim_demo: tuple[Path, str]) -> None:
    out, printed = sim_demo
    summary = json.loads((out / "summary.json").read_text())
    from lanes.lab.headline import leaders

    line = leaders(summary)
    assert line is not None and line.startswith("highest capacity at SLO")
    assert line in printed
    assert line in (out / "report.html").read_text()


def test_lanes_report_writes_a_simulated_demos_page_again(
    sim_demo: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, _ = sim_demo
    copy = tmp_path / "sim"
    import shutil

    shutil.copytree(out, copy)
    (copy / "report.html").unlink()
    assert main(["report", str(copy)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {copy / 'report.html'}"
    page = (copy / "report.html").read_text()
    assert page == (out / "report.html").read_text()  # the same page from the same summary
    # against another baseline: the ratios and the summary follow it
    assert main(["report", str(copy), "--baseline", "fifo", "--out", str(tmp_path / "f.html")]) == 0
    summary = json.loads((copy / "summary.json").read_text())
    assert summary["baseline"] == "fifo"
    assert summary["ratios"]["variants"]["fifo"]["capacity_search"]["ratio"] == pytest.approx(1.0)
    assert "vs fifo" in (tmp_path / "f.html").read_text()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--baseline", "nope"], "baseline 'nope': not a variant (have: independent, fifo, sjf)"),
        (["--level", "1"], "--level 1: "),
    ],
)
def test_lanes_report_on_a_simulated_demo_refuses_what_it_cannot_do(
    sim_demo: tuple[Path, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    out, _ = sim_demo
    import shutil

    copy = tmp_path / "sim"
    shutil.copytree(out, copy)
    before = (copy / "summary.json").read_text()
    assert main(["report", str(copy), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert (copy / "summary.json").read_text() == before  # nothing lost


def test_lanes_report_on_a_simulated_demo_without_its_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "sim.json").write_text("{}")
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "summary.json unreadable" in err and not (tmp_path / "report.html").exists()


def test_a_cuda_host_runs_independent_and_sjf_once() -> None:
    # On a CUDA host `--devices gpu-like` is every GPU, as `auto` is: the two independents are
    # one server, and the demo would spend ~2.5 minutes measuring it twice; the default policy
    # (`auto`) is `sjf` there.
    from lanes.cli.demo import DEFAULT_TWIN, GPU_LIKE_TWIN, demo_text, variants_for
    from lanes.lab.experiment import parse_experiment

    text = demo_text()
    variants = {v.name: v for v in parse_experiment(text, source=None).variants}
    assert {GPU_LIKE_TWIN, "independent", DEFAULT_TWIN, "sjf"} <= set(variants)
    assert "--policy" not in variants[DEFAULT_TWIN].command  # lanes serve's own default
    assert variants_for(text, 0) is None  # no GPU: every variant
    chosen = variants_for(text, 2)
    assert chosen is not None
    assert chosen.split(",") == [n for n in variants if n not in (GPU_LIKE_TWIN, DEFAULT_TWIN)]
