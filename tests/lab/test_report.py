"""``lanes report``: the HTML report and charts built from the stored fixture results folder."""

import base64
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from lanes.cli import main
from lanes.errors import LanesError
from lanes.lab import charts, report

FIXTURE = Path(__file__).parent / "fixtures" / "results"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
TIMES = "\N{MULTIPLICATION SIGN}"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, report.ReportFiles]:
    folder = tmp_path_factory.mktemp("report") / "results"
    shutil.copytree(FIXTURE, folder)
    return folder, report.build_report(folder, command="lanes report results")


def page(built: tuple[Path, report.ReportFiles]) -> str:
    return built[1].html.read_text(encoding="utf-8")


def test_writes_one_page_the_summary_and_the_charts(built) -> None:
    folder, files = built
    assert files.html == folder / "report.html"
    assert files.summary == folder / "summary.json"
    assert sorted(p.name for p in (folder / "charts").iterdir()) == sorted(report.CHARTS)
    for chart in files.charts:
        assert chart.read_bytes().startswith(PNG_MAGIC)
    assert not [p for p in folder.rglob(".*")]  # no temporary left


def test_page_is_self_contained(built) -> None:
    text = page(built)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text, re.I)
    assert not re.search(r"<(script|link|iframe)\b|@import|url\(", text, re.I)
    assert all(
        src.startswith("data:image/png;base64,") for src in re.findall(r"src='([^']*)'", text)
    )


def test_page_embeds_the_charts(built) -> None:
    folder, _ = built
    embedded = [base64.b64decode(d) for d in re.findall(r"src='data:image/png;base64,([^']+)'",
                                                         page(built))]  # fmt: skip
    assert embedded == [(folder / "charts" / name).read_bytes() for name in report.CHARTS]


@pytest.mark.parametrize(
    "shown",
    [
        "<h1>lanes lab: fixture-ocr</h1>",
        "lanes report results",  # the command
        "lanes serve --policy independent --port {port}",  # a variant's command
        "<td>http://127.0.0.1:8000</td>",  # a variant's URL: text, not a link
        f">20 rps</td><td class=''>1.00{TIMES}",  # independent's capacity, the baseline
        f">40 rps</td><td class=''>2.00{TIMES}",  # sjf's capacity, twice the baseline's
        # the headline: sjf's searched capacity (its grid alone here), resolution, paired ratio
        f"<td class='name'>sjf</td><td class=''>40 rps</td><td class=''>+40 rps</td>"
        f"<td class=''>2.00{TIMES}</td><td class=''>20 rps (+20 rps)</td>",
        f"1.08{TIMES} [0.99, 1.16]",  # sjf's goodput over independent's at 40 rps, paired
        # under the headline, which variants lead (lanes.lab.headline.leaders)
        "<p><b>highest capacity at SLO: sjf (40 rps); every other variant&#x27;s interval lies "
        "below it</b></p>",
        "no bisection (the experiment asks for none",
        "<td class=''>line_rnn_zh</td><td class='none'>no data</td><td class=''>below the grid",
        "130 <span class='ci'>[2.94, 257]</span>",  # independent p99 at 40 rps with its t-CI
        "32 <span class='ci'>[6.59, 57.4]</span>",  # independent p99 at 20 rps
        f"<td class=''>0.32{TIMES}</td>",  # sjf p99 at 40 rps over independent's: 42 / 130
        "94.0 %",  # independent SLO attainment at 40 rps
        "1600",  # errors where everything failed
        "slowdown",
        f"1.38{TIMES}",  # char_cnn slowdown, independent, 20 rps
    ],
)
def test_tables_show_the_fixture_numbers(built, shown: str) -> None:
    assert shown in page(built)


def test_missing_data_is_no_data(built) -> None:
    rows = [r for r in page(built).split("<tr") if r.startswith(" class='miss") and "80 rps" in r]
    failed = next(r for r in rows if "independent" in r)
    assert failed.count("no data") >= 4  # p50, p99, ratio, CPU idle, device busy


def test_baseline_and_level_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "results"
    shutil.copytree(FIXTURE, folder)
    out = tmp_path / "other.html"
    args = ["report", str(folder), "--baseline", "sjf", "--out", str(out), "--level", "0"]
    assert main(args) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"wrote {out}"
    assert len(printed) == 2 + len(report.CHARTS)
    text = out.read_text(encoding="utf-8")
    assert f">20 rps</td><td class=''>0.50{TIMES}" in text  # independent's capacity over sjf's
    assert "no timeline for" not in text  # a chart, not text: the PNG says "no data"
    assert "at load 20 rps" in text
    assert not (folder / "report.html").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["/nonexistent/results"], "results folder /nonexistent/results: not a directory"),
        ([str(FIXTURE), "--baseline", "edf"], "baseline 'edf': not a variant"),
        ([str(FIXTURE), "--level", "7"], "--level 7: no such load level (have: 0, 1, 2)"),
    ],
)
def test_bad_arguments_are_one_clear_line(args, message, capsys) -> None:
    assert main(["report", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("lanes report: error: ")
    assert message in lines[0]
    assert not (FIXTURE / "summary.json").exists()  # the stored fixture is never written to


def test_level_must_exist_before_anything_is_written(tmp_path: Path) -> None:
    folder = tmp_path / "results"
    shutil.copytree(FIXTURE, folder)
    with pytest.raises(LanesError):
        report.build_report(folder, level=9)
    assert not (folder / "charts").exists()


# ---- timelines ------------------------------------------------------------------------


def count_at(density: charts.Density, device: str, t: float) -> float:
    times, counts = density[device]
    i = int(np.searchsorted(times, t, side="right")) - 1
    return float(counts[i]) if i >= 0 else 0.0


def test_density_from_slices() -> None:
    density = charts.timeline_density(FIXTURE / "runs" / "independent" / "L1-r1.trace.json")
    assert list(density) == ["gpu0", "gpu1"]  # named by thread_name metadata
    # gpu0 slices (ms): 0-40, 10-60, 30-50, 70-100, 100-130; gpu1: 5-45, 50-90, 95-120
    expected = {0.001: (1, 0), 0.035: (3, 1), 0.055: (1, 1), 0.065: (0, 1), 0.1: (1, 1),
                0.125: (1, 0), 0.2: (0, 0)}  # fmt: skip
    for t, (gpu0, gpu1) in expected.items():
        assert (count_at(density, "gpu0", t), count_at(density, "gpu1", t)) == (gpu0, gpu1), t


def test_density_from_counters() -> None:
    density = charts.timeline_density(FIXTURE / "runs" / "sjf" / "L1-r1.trace.json")
    assert list(density) == ["gpu0", "gpu1"]
    assert [count_at(density, "gpu0", t) for t in (0.01, 0.042, 0.05, 0.2)] == [1, 0, 1, 0]
    assert [count_at(density, "gpu1", t) for t in (0.001, 0.01, 0.055, 0.1)] == [0, 1, 0, 1]


def test_density_of_a_bad_trace_is_empty(tmp_path: Path) -> None:
    bad = tmp_path / "bad.trace.json"
    bad.write_text("[{")
    assert charts.timeline_density(bad) == {}
    assert charts.timeline_density(tmp_path / "missing.json") == {}
    bad.write_text('{"traceEvents": []}')
    assert charts.timeline_density(bad) == {}


def test_the_page_names_the_machine_the_runs_recorded(tmp_path: Path) -> None:
    """Runs measured on two hosts: the page names the one with most runs and says there are
    others."""
    folder = tmp_path / "results"
    shutil.copytree(FIXTURE, folder)
    hosts = [
        {"cpus": 16, "cpu_model": "GPU host", "kernel": "Linux 6", "python": "3.12", "lanes": "0"},
        {"cpus": 2, "cpu_model": "small host", "kernel": "Linux 6", "python": "3.11", "lanes": "0"},
    ]
    runs = sorted((folder / "runs").rglob("L*-r*.json"))
    runs = [p for p in runs if not p.name.endswith(".trace.json")]
    for i, path in enumerate(runs):
        doc = json.loads(path.read_text())
        doc["machine"] = hosts[0] if i else hosts[1]
        path.write_text(json.dumps(doc))
    text = report.build_report(folder).html.read_text(encoding="utf-8")
    assert "16 CPUs (GPU host)" in text and "1 other machine(s) ran the rest" in text
    assert "small host" not in text
