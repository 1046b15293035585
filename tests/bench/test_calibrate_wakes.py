"""``bench/calibrate/busy_wakes.py`` (wake-ups by the runtime calls running at their start) and
``bench/calibrate/client_part.py`` (the client's part deconvolved), on small grids written
here."""

from __future__ import annotations

import importlib
import json
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

CALIBRATE = Path(__file__).resolve().parents[2] / "bench" / "calibrate"


@pytest.fixture
def bw(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    monkeypatch.syspath_prepend(str(CALIBRATE))
    return importlib.import_module("busy_wakes")


@pytest.fixture
def cp(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    monkeypatch.syspath_prepend(str(CALIBRATE))
    return importlib.import_module("client_part")


def request(i: int, ts: float, pre_wake: float, post_wake: float, sent: float, total: float):
    """A request span as lanes serve exports it (spans.rs): the outer pair with its stages and
    the nested ``back`` pair, whose start is when the driver sent the answer."""
    args = {
        "model": "m",
        "decode_ms": 0.01,
        "pre_wait_ms": pre_wake / 2,
        "pre_ms": 0.05,
        "pre_return_ms": pre_wake / 2,
        "batch_wait_ms": 0.0,
        "run_ms": 0.5,
        "handoff_ms": 0.1,
        "answer_wake_ms": post_wake,
        "post_wait_ms": 0.0,
        "post_ms": 0.02,
        "post_return_ms": 0.01,
        "scheduled_ms": 0.6,
        "total_ms": total,
        "batch_size": 1,
    }
    return [
        {"cat": "request", "ph": "b", "id": i, "name": "m", "ts": ts, "args": args},
        {"cat": "request", "ph": "b", "id": i, "name": "back", "ts": sent},
    ]


def job(ts: float, dur: float) -> dict[str, Any]:
    """A device timeline's batch whose runtime call fills its slice (no hold before it)."""
    args = {"measured_ms": dur / 1000.0}
    return {"cat": "job", "ph": "X", "name": "m", "ts": ts, "dur": dur, "tid": 0, "args": args}


def write_run(root: Path, variant: str, level: int, rate: float, events, load=None) -> None:
    folder = root / "runs" / variant
    folder.mkdir(parents=True, exist_ok=True)
    name = f"L{level}-r1"
    (folder / f"{name}.trace.json").write_text(json.dumps({"traceEvents": events}))
    run = {
        "variant": variant,
        "level": level,
        "repeat": 1,
        "offered": {"rate_rps": rate},
        "timeline": f"runs/{variant}/{name}.trace.json",
        "load": load or {"latency_ms": {}, "models": {}},
    }
    (folder / f"{name}.json").write_text(json.dumps(run))


def test_each_wake_up_is_counted_beside_the_calls_running_at_its_start(bw, tmp_path: Path):
    # Two calls overlap from 1,000 to 2,000 µs, one runs on to 3,000.
    events = [job(0.0, 2000.0), job(1000.0, 2000.0)]
    # pre at 500 µs (+10 µs decode): 1 call; post sent at 1,500: 2 calls.
    events += request(1, 500.0, 0.2, 0.8, 1500.0, 2.0)
    # pre at 2,500: 1 call; post sent at 3,500: none.
    events += request(2, 2500.0, 0.4, 0.1, 3500.0, 2.0)
    write_run(tmp_path, "fifo", 0, 100.0, events)
    pooled = bw.collect(tmp_path)[("fifo", 100.0)]
    assert dict(pooled["pre"]) == {1: [pytest.approx(0.2), pytest.approx(0.4)]}
    assert dict(pooled["post"]) == {2: [0.8], 0: [0.1]}


def test_a_device_hold_before_the_call_is_not_a_call(bw, tmp_path: Path):
    # A slice from 0 to 2,000 µs whose call is its last 1 ms: at 500 µs the device is held (its
    # thread handing the batch over), no call runs; at 1,500 one does.
    held = job(0.0, 2000.0)
    held["args"]["measured_ms"] = 1.0
    events = [held, *request(1, 490.0, 0.2, 0.3, 1500.0, 2.0)]
    write_run(tmp_path, "fifo", 0, 100.0, events)
    pooled = bw.collect(tmp_path)[("fifo", 100.0)]
    assert dict(pooled["pre"]) == {0: [pytest.approx(0.2)]}
    assert dict(pooled["post"]) == {1: [0.3]}


def test_the_tables_are_idle_at_the_lowest_level_and_busy_at_every_level(bw, tmp_path: Path):
    # Lowest level: one request beside no call (pre 0.1, post 0.05), one while 2 calls run
    # (pre 3, post 2). The next level: one while 2 calls run (pre 5, post 4), and one beside
    # no call (pre 9), which is not the lowest level's and so not idle.
    low = [job(1000.0, 1000.0), job(1000.0, 1000.0)]
    low += request(1, 100.0, 0.1, 0.05, 500.0, 1.0)
    low += request(2, 1200.0, 3.0, 2.0, 1500.0, 1.0)
    high = [job(1000.0, 1000.0), job(1000.0, 1000.0)]
    high += request(1, 1200.0, 5.0, 4.0, 1500.0, 1.0)
    high += request(2, 5000.0, 9.0, 9.0, 5500.0, 1.0)
    write_run(tmp_path, "fifo", 0, 100.0, low)
    write_run(tmp_path, "fifo", 1, 200.0, high)
    t = bw.tables(bw.collect(tmp_path), cores=2)
    assert [ms for _, ms in t["pre_wake_ms"]] == pytest.approx([0.1] * len(t["pre_wake_ms"]))
    assert t["pre_wake_ms_count"] == 1
    busy = dict((p, ms) for p, ms in t["pre_wake_busy_ms"])
    assert busy[0.0] == 3.0 and busy[1.0] == 5.0 and busy[0.5] == pytest.approx(4.0)
    assert t["post_wake_busy_ms_count"] == 2
    assert set(bw.KEYS) <= set(t)


def test_a_grid_without_spans_is_one_error(bw, tmp_path: Path):
    write_run(tmp_path, "fifo", 0, 100.0, [job(0.0, 10.0)])
    with pytest.raises(SystemExit, match="no request spans"):
        bw.collect(tmp_path)


def lowest_grid(root: Path, c_draw, rng: np.random.Generator) -> None:
    """Three repeats at 100 req/s of two models whose client latency is each request's span
    total plus the I/O CPU plus a draw of C; the run files hold the quantiles of that sum."""
    for r in range(1, 4):
        events: list[dict[str, Any]] = []
        lat: dict[str, list[float]] = {"a": [], "b": []}
        for i in range(1200):
            model = "a" if i % 3 else "b"
            total = (0.8 if model == "a" else 3.0) + rng.gamma(4.0, 0.03)
            lat[model].append(total + 0.2 + c_draw(rng))
            span = request(i, i * 10_000.0, 0.05, 0.05, i * 10_000.0 + 500.0, total)
            span[0]["args"]["model"] = model
            events += span
        everything = lat["a"] + lat["b"]

        def qs(xs: list[float]) -> dict[str, float]:
            return {f"p{q}": float(np.quantile(xs, q / 100)) for q in (50, 90, 99)}

        load = {
            "latency_ms": qs(everything),
            "models": {m: {"latency_ms": qs(xs)} for m, xs in lat.items()},
        }
        folder = root / "runs" / "fifo"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"L0-r{r}.trace.json").write_text(json.dumps({"traceEvents": events}))
        run = {
            "variant": "fifo",
            "level": 0,
            "repeat": r,
            "offered": {"rate_rps": 100.0},
            "timeline": f"runs/fifo/L0-r{r}.trace.json",
            "load": load,
        }
        (folder / f"L0-r{r}.json").write_text(json.dumps(run))


def test_the_deconvolved_client_part_recovers_a_rare_long_one(cp, tmp_path: Path):
    # C is 0 for 90 % of requests and 2 ms for the rest: the differences of quantiles spread
    # it over the median; the fit puts nothing there and about 2 ms at the top.
    lowest_grid(tmp_path, lambda g: 2.0 if g.random() < 0.1 else 0.0, np.random.default_rng(7))
    low = cp.Lowest(tmp_path, io_ms=0.2)
    c, loss = cp.fit(low, steps=600)
    table = dict(zip(cp.POINTS, c, strict=True))
    assert table[0.5] < 0.05 and table[0.8] < 0.1
    assert 1.5 < table[0.95] < 2.5
    assert loss < 0.5 * low.loss(cp.differences(low))
    assert list(c) == sorted(c)


def test_a_lowest_level_without_spans_is_one_error(cp, tmp_path: Path):
    write_run(tmp_path, "fifo", 0, 100.0, [job(0.0, 10.0)])
    with pytest.raises(SystemExit, match="no request spans"):
        cp.Lowest(tmp_path, io_ms=0.2)
