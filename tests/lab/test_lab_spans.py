"""``lanes.lab.spans`` and the report's "where the server's time went" table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from lanes.lab import report, spans

FIXTURE = Path(__file__).parent / "fixtures" / "results"


def span(model: str, total: float, wait: float, run: float) -> dict[str, Any]:
    """A request span's args as ``lanes serve --trace-requests`` exports them."""
    return {
        "model": model, "decode_ms": 0.02, "pre_wait_ms": 0.03, "pre_ms": 0.1,
        "pre_return_ms": 0.01, "scheduled_ms": wait + run + 0.2, "batch_wait_ms": wait,
        "run_ms": run, "handoff_ms": 0.2, "answer_wake_ms": 0.02, "post_ms": 0.05,
        "post_return_ms": 0.04, "total_ms": total, "batch_size": 1,
    }  # fmt: skip


def events(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for i, s in enumerate(found):
        out.append({"name": s["model"], "cat": "request", "ph": "b", "id": i, "ts": 0, "pid": 1,
                    "tid": 0, "args": s})  # fmt: skip
        out.append({"name": s["model"], "cat": "request", "ph": "e", "id": i, "ts": 1, "pid": 1,
                    "tid": 0})  # fmt: skip
        out.append({"name": "front", "cat": "request", "ph": "b", "id": i, "ts": 0, "pid": 1,
                    "tid": 0})  # fmt: skip
    return out


def test_parts_add_up_to_the_total() -> None:
    p = spans.parts(span("m", 10.0, 4.0, 5.0))
    assert p["hooks"] == pytest.approx(0.17)  # decode + pre + post
    assert p["hand-offs"] == pytest.approx(10.0 - 4.0 - 5.0 - 0.17)
    assert sum(v for k, v in p.items() if k != "total") == pytest.approx(p["total"])


def test_read_takes_only_the_outer_request_events() -> None:
    trace = {"traceEvents": [{"ph": "X", "name": "m", "args": {"model": "m"}}, *events(
        [span("a", 1, 0, 0.5), span("b", 2, 0, 1)]
    )]}  # fmt: skip
    assert [s["model"] for s in spans.read(trace)] == ["a", "b"]
    assert spans.read({}) == []


def test_table_gives_each_models_p50_and_p99() -> None:
    found = [span("a", float(t), 0.0, 0.5) for t in range(1, 102)] + [span("b", 3.0, 1.0, 1.5)]
    t = spans.table(found)
    assert list(t) == ["a", "b"]
    assert t["a"]["requests"] == 101
    assert t["a"]["total"] == pytest.approx((51.0, 100.0))
    assert t["b"]["batch wait"] == (1.0, 1.0)


def test_the_report_shows_where_time_went_only_with_spans(tmp_path: Path) -> None:
    folder = tmp_path / "results"
    shutil.copytree(FIXTURE, folder)
    plain = report.build_report(folder).html.read_text(encoding="utf-8")
    assert "Where the server's time went" not in plain
    path = folder / "runs" / "sjf" / "L1-r1.trace.json"  # the level the report shows (1)
    trace = json.loads(path.read_text())
    trace["traceEvents"] += events([span("char_cnn", 2.0, 0.5, 1.0)] * 3)
    path.write_text(json.dumps(trace))
    text = report.build_report(folder).html.read_text(encoding="utf-8")
    section = text.split("Where the server's time went")[1]
    row = next(r for r in section.split("<tr") if "char_cnn" in r)
    assert ">sjf<" in row and ">3<" in row  # variant, requests
    assert ">2.00 / 2.00<" in row and ">0.50 / 0.50<" in row and ">1.00 / 1.00<" in row
    assert "independent" not in section.split("</table>")[0].split("<tbody>")[1]
