"""``bench/calibrate/spans.py``: request spans against the client's latency, per run."""

from __future__ import annotations

import importlib
import json
import types
from pathlib import Path
from typing import Any

import pytest

CALIBRATE = Path(__file__).resolve().parents[2] / "bench" / "calibrate"


@pytest.fixture
def sp(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """The script as a module (it imports compare.py and timelines.py from beside itself)."""
    monkeypatch.syspath_prepend(str(CALIBRATE))
    return importlib.import_module("spans")


def span(total: float, batch_wait: float, run: float, **extra: float) -> dict[str, Any]:
    """A request span's args as lanes serve exports them (spans.rs), the hooks' stages given."""
    args = {
        "model": "m",
        "decode_ms": 0.01,
        "pre_wait_ms": 0.02,
        "pre_ms": 0.05,
        "pre_return_ms": 0.03,
        "scheduled_ms": batch_wait + run + 0.1,
        "batch_wait_ms": batch_wait,
        "run_ms": run,
        "handoff_ms": 0.1,
        "answer_wake_ms": 0.04,
        "post_wait_ms": 0.06,
        "post_ms": 0.02,
        "post_return_ms": 0.03,
        "total_ms": total,
        "batch_size": 1,
    }
    return args | extra


def write_run(root: Path, repeat: int, spans: list[dict[str, Any]], client: dict[str, float]):
    trace = {
        "traceEvents": [
            {
                "name": "m",
                "cat": "request",
                "ph": "b",
                "id": i,
                "ts": 0,
                "pid": 1,
                "tid": 0,
                "args": s,
            }
            for i, s in enumerate(spans)
        ]
        + [
            {
                "name": "m",
                "cat": "job",
                "ph": "X",
                "ts": 0,
                "dur": 1,
                "pid": 1,
                "tid": 0,
                "args": {"model": "m"},
            }
        ],
        "otherData": {},
    }
    folder = root / "runs" / "fifo"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"L0-r{repeat}.trace.json").write_text(json.dumps(trace))
    run = {
        "variant": "fifo",
        "offered": {"rate_rps": 100.0},
        "timeline": f"runs/fifo/L0-r{repeat}.trace.json",
        "load": {"models": {"m": {"latency_ms": client}}},
    }
    (folder / f"L0-r{repeat}.json").write_text(json.dumps(run))


def test_terms_split_a_span(sp):
    t = sp.terms(span(2.0, 0.5, 1.0))
    assert t["inside"] == pytest.approx(1.5)
    assert t["outside"] == pytest.approx(0.5)
    assert t["wake_pre"] == pytest.approx(0.05)  # pre_wait + pre_return
    assert t["wake_post"] == pytest.approx(0.10)  # answer_wake + post_wait
    # A model without hooks has no *_wait_ms.
    bare = span(2.0, 0.5, 1.0)
    del bare["pre_wait_ms"], bare["post_wait_ms"]
    assert sp.terms(bare)["wake_pre"] == pytest.approx(0.03)
    assert sp.terms(bare)["wake_post"] == pytest.approx(0.04)


def test_report_means_each_runs_quantiles_and_subtracts_the_server(sp, tmp_path):
    # Two repeats: totals 1..11 and 3..13 ms (11 spans each); the client saw 0.5 ms more at p50.
    for repeat, base in ((1, 1.0), (2, 3.0)):
        spans = [span(base + i, 0.0, 0.5) for i in range(11)]
        write_run(tmp_path, repeat, spans, {"p50": base + 5.5, "p90": base + 9.5, "p99": base + 10})
    lines, tables = sp.report(tmp_path)
    row = next(line for line in lines if line.startswith("| fifo | 100 | m |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3] == "22"
    # p50 of totals: 6 and 8 -> 7; the client's mean p50 7.5 -> 0.5 more.
    assert cells[5].split(" / ")[0] == "7.00"
    assert cells[6].split(" / ")[0] == "0.50"
    waits = tables["fifo@100"]
    assert [p for p, _ in waits["wake_pre"]] == list(sp.QUANTILES)
    assert waits["wake_pre"][0][1] == pytest.approx(0.05)
    # the client part per model at p50 / p90 / p99, as the table's `client - total`
    assert waits["client_part"]["m"][0] == pytest.approx(0.5)
    assert len(waits["client_part"]["m"]) == 3


def test_a_lab_without_spans_is_refused(sp, tmp_path):
    write_run(tmp_path, 1, [], {"p50": 1.0, "p90": 2.0, "p99": 3.0})
    with pytest.raises(SystemExit, match="no request spans"):
        sp.report(tmp_path)
