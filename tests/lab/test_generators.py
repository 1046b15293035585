"""Generators: one global schedule split into streams (the split rule of
:mod:`lanes.lab.generators`), a generator's segments merged in sequence, not side by side
(real load-engine runs against a loopback server), and the deadline every request carries (the
deadline rule)."""

from __future__ import annotations

import json
import re
import time

import numpy as np
import pytest

from lanes.bench import engine
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


REST, GRPC = "http://127.0.0.1:8000/", "grpc://127.0.0.1:8001"
_DECIMAL = re.compile(r"[+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
"""The server's plain decimal number of ``lanes-timeout-ms`` (crates/lanes-kserve deadline.rs)."""
_GRPC_TIMEOUT = re.compile(r"[0-9]{1,8}[HMSmun]")
"""gRPC's ``grpc-timeout``: at most 8 digits and a unit."""
_PER_UNIT_MS = {"H": 3_600_000.0, "M": 60_000.0, "S": 1000.0, "m": 1.0, "u": 1e-3, "n": 1e-6}


@pytest.mark.parametrize(
    ("url", "deadline_ms", "headers"),
    [
        (REST, None, []),
        (GRPC, None, []),
        (REST, 150.0, ["lanes-timeout-ms: 150"]),
        (REST, 0.5, ["lanes-timeout-ms: 0.5"]),
        (REST, 2.25, ["lanes-timeout-ms: 2.25"]),
        (REST, 1e-5, ["lanes-timeout-ms: 1e-05"]),
        (REST, 600_000.0, ["lanes-timeout-ms: 600000"]),
        (GRPC, 150.0, ["grpc-timeout: 150m"]),
        (GRPC, 1.0, ["grpc-timeout: 1m"]),
        (GRPC, 0.5, ["grpc-timeout: 500u"]),  # below 1 ms: microseconds
        (GRPC, 1.5, ["grpc-timeout: 1500u"]),  # exact, not rounded up to 2 ms
        (GRPC, 0.0004, ["grpc-timeout: 1u"]),  # rounded up, never to 0
        (GRPC, 2.0001, ["grpc-timeout: 2001u"]),
        (GRPC, 600_000.0, ["grpc-timeout: 600000m"]),
        (GRPC, 123_456.5, ["grpc-timeout: 123457m"]),  # microseconds would take 9 digits
    ],
)
def test_a_deadline_goes_as_the_protocols_header(url, deadline_ms, headers):
    assert generators.deadline_headers(url, deadline_ms) == headers
    for line in headers:
        name, value = line.split(": ")
        if name == "lanes-timeout-ms":
            assert _DECIMAL.fullmatch(value) and float(value) == deadline_ms
        else:
            assert _GRPC_TIMEOUT.fullmatch(value), value
            sent = int(value[:-1]) * _PER_UNIT_MS[value[-1]]
            assert deadline_ms <= sent < deadline_ms + max(1e-3, deadline_ms * 1e-5)


@pytest.mark.parametrize(
    ("url", "header"), [(REST, "lanes-timeout-ms: 20"), (GRPC, "grpc-timeout: 20m")]
)
def test_the_spec_carries_the_deadline_to_every_segments_engine_run(url, header):
    """A remote generator ([cluster]) gets the spec alone: the deadline must be in it."""
    (stream,) = generators.split(_load(), [1.0], connections=8)
    spec = generators.spec_for(
        url=url, model="m", corpus="c.jsonl", stream=stream, arrival="poisson",
        timeout_s=5.0, warmup_s=1.0, start_unix=0.0, deadline_ms=20.0,
    )  # fmt: skip
    spec = json.loads(json.dumps(spec))  # as a generator process or a Ray actor reads it
    assert spec["deadline_ms"] == 20.0
    for seg in spec["segments"]:
        opts = generators.engine_options(spec, seg)
        assert engine.spec(url, **opts)["headers"] == [header]
    plain = generators.spec_for(
        url=url, model="m", corpus="c.jsonl", stream=stream, arrival="poisson",
        timeout_s=5.0, warmup_s=1.0, start_unix=0.0,
    )  # fmt: skip
    assert plain["deadline_ms"] is None
    assert engine.spec(url, **generators.engine_options(plain, stream[0]))["headers"] == []


def test_every_request_a_generator_sends_carries_the_deadline(tmp_path):
    corpus = tmp_path / "post.jsonl"
    corpus.write_text('{"method": "POST", "path": "/v2/models/m/infer", "body": "{}"}\n')
    load = _load(rate=50.0, warmup_s=0.2, measure_s=0.4)
    (stream,) = generators.split(load, [1.0], connections=4)
    with serve() as srv:
        spec = generators.spec_for(
            url=srv.url, model="m", corpus=str(corpus), stream=stream, arrival="poisson",
            timeout_s=5.0, warmup_s=0.2, start_unix=time.time() + 0.2, deadline_ms=2.5,
        )  # fmt: skip
        generators.run_generator(spec)
        seen = srv.seen
    assert len(seen) == sum(s["count"] for s in stream) > 0  # warm-up sends included
    assert {s.headers.get("lanes-timeout-ms") for s in seen} == {"2.5"}
