"""A generator's segments run one after another: their results merge in sequence, not side by
side (real load-engine runs against a loopback server)."""

from __future__ import annotations

import time

from lanes.bench.result import Result
from lanes.lab import generators
from loopback import serve


def test_a_piecewise_generator_places_each_segment_at_its_offset(tmp_path):
    corpus = tmp_path / "get.jsonl"
    corpus.write_text('{"method": "GET", "path": "/"}\n')
    # a trace of 2 arrivals in its first half second and 6 in its second: rates 0.5x, 1.5x
    trace = [0.0, 0.25, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0]
    with serve() as srv:
        spec = generators.spec_for(
            url=srv.url,
            model="m",
            corpus=str(corpus),
            rate=200.0,
            concurrency=None,
            arrival="trace",
            cv=3.0,
            trace=trace,
            segment_s=0.5,
            warmup_s=0.0,
            measure_s=1.0,
            connections=8,
            timeout_s=5.0,
            seed=1,
            start_unix=time.time() + 0.2,
        )
        assert [r for _, _, r in generators.segments(spec, "measure")] == [100.0, 300.0]
        r = Result(generators.run_generator(spec))
    assert r.data["scheduled"] == 50 + 150  # R x d per segment
    first, second = sum(r.sends_binned(500, 0.0, 0.5)), sum(r.sends_binned(500, 0.5, 1.0))
    # Merged side by side, both segments' sends would fall in the first half second.
    assert first + second == 200
    assert second >= 120, (first, second)
    assert sum(int(p["requests"]) for p in r.data["timeseries"]) == r.requests == 200
