"""``lanes.lab.scrape.within``: a device timeline cut to the measurement window on the Unix
clock — jobs by their end, requests by their last event, counters by their time."""

from __future__ import annotations

from typing import Any

from lanes.lab import scrape

ORIGIN = 1_000.0


def trace() -> dict[str, Any]:
    us = 1e6
    return {
        "displayTimeUnit": "ms",
        "otherData": {"origin_unix_s": ORIGIN, "jobs": 4, "requests": 3, "window_s": 5.0},
        "traceEvents": [
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": 0, "args": {"name": "cpu:0"}},
            # jobs ending before, inside (twice: one began before the window) and after it
            {"ph": "X", "cat": "job", "ts": 0.5 * us, "dur": 0.2 * us},
            {"ph": "X", "cat": "job", "ts": 0.9 * us, "dur": 0.3 * us},
            {"ph": "X", "cat": "job", "ts": 2.0 * us, "dur": 0.1 * us},
            {"ph": "X", "cat": "job", "ts": 2.9 * us, "dur": 0.2 * us},
            # request 1 ends inside, request 2 after the window, request 3 before it
            {"ph": "b", "cat": "request", "id": 1, "ts": 0.8 * us},
            {"ph": "e", "cat": "request", "id": 1, "ts": 1.5 * us},
            {"ph": "b", "cat": "request", "id": 2, "ts": 2.5 * us},
            {"ph": "e", "cat": "request", "id": 2, "ts": 3.5 * us},
            {"ph": "b", "cat": "request", "id": 3, "ts": 0.1 * us},
            {"ph": "e", "cat": "request", "id": 3, "ts": 0.2 * us},
            {"ph": "C", "name": "queue", "ts": 0.5 * us, "args": {"depth": 1}},
            {"ph": "C", "name": "queue", "ts": 1.5 * us, "args": {"depth": 2}},
        ],
    }


def test_a_timeline_is_cut_to_the_window() -> None:
    got = scrape.within(trace(), ORIGIN + 1.0, ORIGIN + 3.0)
    events = got["traceEvents"]
    assert [e["ph"] for e in events] == ["M", "X", "X", "b", "e", "C"]
    assert [e["ts"] for e in events if e["ph"] == "X"] == [0.9e6, 2.0e6]
    assert {e["id"] for e in events if e["ph"] in "be"} == {1}
    other = got["otherData"]
    assert other["window_unix"] == [ORIGIN + 1.0, ORIGIN + 3.0] and other["window_s"] == 2.0
    assert other["jobs"] == 2 and other["requests"] == 1
    assert other["origin_unix_s"] == ORIGIN


def test_a_timeline_without_its_origin_is_kept_whole() -> None:
    t = trace()
    del t["otherData"]["origin_unix_s"]
    assert scrape.within(t, ORIGIN + 1.0, ORIGIN + 3.0) == t
