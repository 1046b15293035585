"""A profiled experiment end to end: the run files, summary.json's diagnosis and cost of
profiling, `lanes report`'s Diagnosis section and what `lanes bench run` prints."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ZOO = Path(__file__).parent / "zoo"


def test_profiled_and_unprofiled_repeats_give_the_cost_and_the_report_shows_it(
    tmp_path: Path,
) -> None:
    command = [sys.executable, str(ZOO / "clean.py"), "--port", "{port}"]
    exp = tmp_path / "exp.toml"
    exp.write_text(
        f"""name = "profiled"
[[variant]]
name = "clean"
command = {json.dumps(command)}
[workload]
mix = [{{ model = "zoo", weight = 1, corpus = {json.dumps(str(ZOO / "request.jsonl"))} }}]
levels = [50, 100]
warmup_s = 0.5
measure_s = 2
repeats = 2
slo_ms = 500
[stability]
max_extensions = 0
[profile]
levels = [100]
repeats = [1]
""",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "lanes", "bench", "run", str(exp), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    runs = out / "runs" / "clean"
    profiled = json.loads((runs / "L1-r1.json").read_text())
    assert "diagnosis" in profiled
    assert (out / profiled["diagnosis"]["profile"] / "profile.json").is_file()
    for unprofiled in ("L0-r1", "L0-r2", "L1-r2"):
        assert "diagnosis" not in json.loads((runs / f"{unprofiled}.json").read_text())
    assert "clean at load 100.0, repeat 1: no finding" in done.stdout
    assert "clean: cost of profiling at load 100.0: goodput" in done.stdout

    summary = json.loads((out / "summary.json").read_text())
    entry = summary["diagnosis"]["clean"]
    assert [(r["level"], r["repeat"]) for r in entry["runs"]] == [(1, 1)]
    cost = entry["cost"][0]
    assert cost["unprofiled_runs"] == 1
    assert all(v is not None for v in cost["goodput_rps"])

    report = subprocess.run(
        [sys.executable, "-m", "lanes", "report", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert report.returncode == 0, report.stderr[-2000:]
    page = (out / "report.html").read_text()
    assert "<h2>Diagnosis</h2>" in page
    assert "The cost of profiling" in page
    assert "data:image/png;base64," in page  # the per-core heat map
    if profiled["diagnosis"]["flamegraphs"]:
        assert "data:image/svg+xml;base64," in page
