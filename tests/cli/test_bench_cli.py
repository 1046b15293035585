"""``lanes bench`` and ``lanes bench corpus`` end to end, through ``main``, against real
loopback servers."""

from __future__ import annotations

import _thread
import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from lanes.cli import main
from loopback import Server

RESULT_KEYS = {
    "mode",
    "requests",
    "duration_s",
    "rps",
    "latency_ms",
    "service_time_ms",
    "late_sends_fraction",
    "errors",
    "timeseries",
}
PERCENTILES = {"mean", "p50", "p75", "p90", "p99", "p999", "max"}
ERROR_CLASSES = {"connect", "read", "write", "status", "timeout"}
POINT_KEYS = {"second", "requests", "errors", "p50_ms", "p99_ms"}
HDR_HEADER = ["Value", "Percentile", "TotalCount", "1/(1-Percentile)"]


def bench(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["bench", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def words(text: str) -> str:
    """``text`` with every run of white space made one space (help text wraps anywhere)."""
    return " ".join(text.split())


def check_one_error_line(out: str, err: str, command: str = "lanes bench") -> None:
    assert out == ""
    assert err.startswith(f"{command}: error: ")
    assert err.endswith("\n")
    assert err.count("\n") == 1, err


def check_distribution(path: Path, requests: int) -> None:
    lines = path.read_text().splitlines()
    assert lines[0].split() == HDR_HEADER
    assert any(f"Total count    = {requests:12}" in line for line in lines), lines[-3:]


# --- runs -------------------------------------------------------------------------------------


def test_closed_loop_run_writes_its_report_and_files(
    http_server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_json, hdr, hdr_service = tmp_path / "r.json", tmp_path / "lat.hdr", tmp_path / "svc.hdr"
    status, out, err = bench(
        capsys,
        http_server.url,
        "-n",
        "50",
        "-c",
        "2",
        "--json",
        str(out_json),
        "--hdr",
        str(hdr),
        "--hdr-service",
        str(hdr_service),
    )
    assert status == 0, err
    assert err == ""
    assert "closed loop" in out
    assert "Requests/sec" in out
    assert "Latency (ms)" in out
    assert http_server.count == 50

    data = json.loads(out_json.read_text())
    assert set(data) >= RESULT_KEYS
    assert data["mode"] == "closed"
    assert data["requests"] == 50
    assert data["duration_s"] > 0
    assert data["rps"] > 0
    assert set(data["latency_ms"]) == PERCENTILES
    assert set(data["service_time_ms"]) == PERCENTILES
    assert 0.0 <= data["late_sends_fraction"] <= 1.0
    assert set(data["errors"]) >= ERROR_CLASSES
    assert all(data["errors"][c] == 0 for c in ERROR_CLASSES)
    series = data["timeseries"]
    assert isinstance(series, list)
    assert series
    for point in series:
        assert isinstance(point, dict)
        assert set(point) >= POINT_KEYS
    assert sum(p["requests"] for p in series) == 50

    check_distribution(hdr, 50)
    check_distribution(hdr_service, 50)


def test_open_loop_run_reports_its_schedule(
    http_server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = bench(capsys, http_server.url, "-R", "300", "-n", "60")
    assert status == 0, err
    assert "open loop" in out
    assert "scheduled" in out
    assert "Sent 60 of 60 scheduled" in out
    assert http_server.count == 60


def test_quiet_prints_nothing(http_server: Server, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = bench(capsys, http_server.url, "-n", "10", "-c", "1", "--quiet")
    assert status == 0, err
    assert out == ""
    assert http_server.count == 10


def test_durations_take_units(http_server: Server, capsys: pytest.CaptureFixture[str]) -> None:
    began = time.monotonic()
    status, out, err = bench(capsys, http_server.url, "-d", "300ms", "-c", "2")
    took = time.monotonic() - began
    assert status == 0, err
    assert "closed loop" in out
    assert took < 3, took
    assert http_server.count > 0


def test_a_bad_time_is_a_usage_error(
    http_server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = bench(capsys, http_server.url, "-d", "10x")
    assert status == 2
    assert out == ""
    assert "not a time" in err
    assert http_server.count == 0


def test_ctrl_c_ends_with_the_partial_report_and_status_130(
    http_server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_json = tmp_path / "r.json"
    timer = threading.Timer(0.3, _thread.interrupt_main)
    began = time.monotonic()
    timer.start()
    try:
        status, out, err = bench(
            capsys, http_server.url, "-d", "30s", "-c", "1", "--json", str(out_json)
        )
    finally:
        timer.cancel()
    assert time.monotonic() - began < 5
    assert status == 130, err
    assert "interrupted" in out
    assert "Requests/sec" in out
    data = json.loads(out_json.read_text())
    assert data["interrupted"] is True
    assert data["requests"] > 0


# --- errors: one clean line, exit 2 -----------------------------------------------------------


def test_an_unreachable_target_is_one_error_line(
    closed_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{closed_port}/"
    status, out, err = bench(capsys, url, "-n", "5")
    assert status == 2
    check_one_error_line(out, err)
    assert err.startswith(f"lanes bench: error: cannot connect to {url}")


def test_a_bad_url_is_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = bench(capsys, "https://x/", "-n", "5")
    assert status == 2
    check_one_error_line(out, err)
    assert "bad URL" in err


def test_a_zero_rate_is_one_error_line(
    http_server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = bench(capsys, http_server.url, "-R", "0", "-n", "5")
    assert status == 2
    check_one_error_line(out, err)
    assert "--rate" in err
    assert http_server.count == 0


def test_a_bad_corpus_line_is_named_by_file_and_line(
    http_server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"path": "/ok"}\n{"path": \n')
    status, out, err = bench(capsys, http_server.url, "--corpus", str(corpus), "-n", "5")
    assert status == 2
    check_one_error_line(out, err)
    assert f"{corpus}:2:" in err
    assert http_server.count == 0


def test_json_into_a_missing_directory_fails_before_any_request(
    http_server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "no-such-dir" / "r.json"
    status, out, err = bench(capsys, http_server.url, "-n", "5", "--json", str(target))
    assert status == 2
    check_one_error_line(out, err)
    assert "--json" in err
    assert "does not exist" in err
    assert http_server.count == 0
    assert not target.parent.exists()


# --- lanes bench corpus -----------------------------------------------------------------------


def test_a_kserve_corpus_drives_a_run(
    http_server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    images = tmp_path / "inputs"
    images.mkdir()
    np.save(images / "zeros.npy", np.zeros((1, 4, 4), dtype=np.float32))
    corpus = tmp_path / "corpus.jsonl"

    status = main(["bench", "corpus", "--kserve", "m", "--images", str(images), "-o", str(corpus)])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "wrote 1 requests" in captured.out
    lines = corpus.read_text().splitlines()
    assert len(lines) == 1
    entry = json.loads(lines[0])
    assert entry["path"] == "/v2/models/m/infer"
    assert entry["method"] == "POST"

    status, _, err = bench(capsys, http_server.url, "--corpus", str(corpus), "-n", "5", "-c", "1")
    assert status == 0, err
    seen = http_server.seen
    assert len(seen) == 5
    for request in seen:
        assert request.method == "POST"
        assert request.path == "/v2/models/m/infer"
        head_length = int(request.headers["inference-header-content-length"])
        head = json.loads(request.body[:head_length])
        assert head["inputs"][0]["shape"] == [1, 1, 4, 4]
        assert head["inputs"][0]["datatype"] == "FP32"
        assert request.body[head_length:] == bytes(4 * 16)  # 16 float32 zeros


def test_corpus_from_a_missing_directory_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "corpus.jsonl"
    args = ["--kserve", "m", "--images", str(tmp_path / "missing"), "-o", str(out_file)]
    status = main(["bench", "corpus", *args])
    captured = capsys.readouterr()
    assert status == 2
    check_one_error_line(captured.out, captured.err, "lanes bench corpus")
    assert not out_file.exists()


# --- help -------------------------------------------------------------------------------------


def test_top_level_help_lists_bench_but_not_the_routed_parser(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "    bench " in out
    assert "bench-corpus" not in out


def test_bench_help_explains_the_loops(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--help"]) == 0
    out = words(capsys.readouterr().out)
    assert out.startswith("usage: lanes bench")
    assert "open loop" in out
    assert "lanes bench corpus" in out
