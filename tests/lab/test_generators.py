"""Generators: one global schedule split into streams (the split rule of
:mod:`lanes.lab.generators`), and a generator's segments merged in sequence, not side by side
(real load-engine runs against a loopback server)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from lanes.bench.result import Result
from lanes.lab import generators
from loopback import serve


def _load(**kw):
    base = {
        "rate": 100.0,
        "concurrency": None,
        "arrival": "poisson",
        "cv": 3.0,
        "trace": None,
        "segment_s": 0.5,
        "warmup_s": 1.0,
        "measure_s": 4.0,
        "seed": 3,
    }
    return {**base, **kw}


def _counts(streams, phase="measure"):
    return [sum(s["count"] for s in stream if s["phase"] == phase) for stream in streams]


@pytest.mark.parametrize("arrival", ["poisson", "bursty", "constant"])
def test_the_streams_add_up_to_the_one_schedule(arrival):
    load = _load(arrival=arrival, rate=250.0)
    streams = generators.split(load, [0.5, 0.25, 0.25], connections=8)
    assert streams == generators.split(load, [0.5, 0.25, 0.25], connections=8)  # seeded
    total = sum(_counts(streams))
    if arrival != "bursty":
        assert total == 250 * 4  # R x d exactly
    else:  # the segment rates are drawn once for every stream: the total is theirs
        rates = generators.segments(load, "measure")
        assert abs(total - sum(r * d for _, d, r in rates)) <= len(rates)
    for stream in streams:
        for seg in stream:
            assert seg["count"] > 0 and seg["connections"] == 8
            if arrival != "constant":
                assert seg["rate"] == pytest.approx(seg["count"] / seg["duration_s"])


def test_bursty_streams_share_the_segment_rates():
    streams = generators.split(_load(arrival="bursty", cv=2.0), [0.5, 0.5], connections=8)
    per_segment = [
        {s["offset_s"]: s["count"] for s in stream if s["phase"] == "measure"} for stream in streams
    ]
    common = sorted(set(per_segment[0]) & set(per_segment[1]))
    a = np.array([per_segment[0][o] for o in common], dtype=float)
    b = np.array([per_segment[1][o] for o in common], dtype=float)
    # independent draws per stream would leave the two uncorrelated
    assert np.corrcoef(a, b)[0, 1] > 0.8


def test_equal_constant_streams_interleave_into_one_clock():
    streams = generators.split(_load(arrival="constant", rate=100.0), [0.25] * 4, connections=8)
    times = sorted(
        s["offset_s"] + i / s["rate"]
        for stream in streams
        for s in stream
        if s["phase"] == "measure"
        for i in range(s["count"])
    )
    assert len(times) == 400
    assert np.allclose(np.diff(times), 0.01)
    assert times[0] == pytest.approx(1.0)


def test_closed_loop_shares_out_the_concurrency():
    streams = generators.split(_load(rate=None, concurrency=8), [0.5, 0.25, 0.25], 64)
    assert [[s["connections"] for s in st] for st in streams] == [[4, 4], [2, 2], [2, 2]]
    assert all(s["count"] is None for st in streams for s in st)


def test_a_piecewise_generator_places_each_segment_at_its_offset(tmp_path):
    corpus = tmp_path / "get.jsonl"
    corpus.write_text('{"method": "GET", "path": "/"}\n')
    # a trace of 2 arrivals in its first half second and 6 in its second: rates 0.5x, 1.5x
    trace = [0.0, 0.25, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0]
    load = _load(arrival="trace", trace=trace, rate=200.0, warmup_s=0.0, measure_s=1.0)
    assert [r for _, _, r in generators.segments(load, "measure")] == [100.0, 300.0]
    (stream,) = generators.split(load, [1.0], connections=8)
    assert [s["count"] for s in stream] == [50, 150]
    with serve() as srv:
        spec = generators.spec_for(
            url=srv.url,
            model="m",
            corpus=str(corpus),
            stream=stream,
            arrival="trace",
            timeout_s=5.0,
            warmup_s=0.0,
            start_unix=time.time() + 0.2,
        )
        r = Result(generators.run_generator(spec))
    assert r.data["scheduled"] == 50 + 150
    # The second segment's sends from 0.5 s on, a slow host's late ones included (a busy
    # neighbour once pushed 2 of them past 1.0 s).
    first, second = sum(r.sends_binned(500, 0.0, 0.5)), sum(r.sends_binned(500, 0.5, 3.0))
    # Merged side by side, both segments' sends would fall in the first half second.
    assert first + second == 200
    assert second >= 120, (first, second)
    assert sum(int(p["requests"]) for p in r.data["timeseries"]) == r.requests == 200
