"""Load generators: separate processes, each a pure function from a spec to a result JSON.

The field's lab ran "1-10 load machines x 1-10 cloned traffic groups". Here a **generator** is
one process offering one stream of a level: one per mix entry and clone (and, on a Ray
cluster, per machine: :mod:`lanes.lab.cluster`). Each stream is one model's, so per-model
histograms come for free and the total is an exact HdrHistogram merge
(:func:`lanes.bench.merge`).

A generator reads its spec (JSON, :func:`spec_for`) on stdin and writes its result (the load
engine's JSON, docs/bench.md, plus ``"model"``) on stdout; it touches no file and no state of
the runner, so it runs on another host given the same spec, the corpus and a synchronised
clock (``start_unix``). :func:`run_generator` is that function; ``python -m
lanes.lab.generators`` is the process.

Schedule rule (:func:`segments`): the warm-up and the measurement are each cut into segments of
``segment_s`` with a rate each, started at their offsets from ``start_unix`` (the next segment
starts while the last one's replies are still arriving, so the load never pauses):

- ``poisson`` / ``constant``: one segment per phase at the level's rate;
- ``bursty``: segment rates drawn from a gamma law of mean = the rate and coefficient of
  variation ``cv`` (seeded), Poisson within a segment — a doubly stochastic (Cox) process;
- ``trace``: the trace's arrivals counted per ``segment_s`` from its start (looped when short),
  scaled so that the phase's mean rate is the level's rate, Poisson within a segment. With
  ``trace_fit = "time"`` the trace's time axis is first divided by (level's rate / the trace's
  mean rate), as ``lanes sim`` does: a sparse production trace then plays its bursts and lulls
  at the level's rate within the window, instead of the window seeing seconds of it;
- closed loop: one segment per phase at ``connections`` = the generator's concurrency.

Split rule (:func:`split`): there is ONE seeded global schedule per run, cut into the
generators' streams with shares p_g (mix weight / (machines x clones)), so that the merged
arrivals are the intended process and the total count is the schedule's:

- the segment rates are drawn once, from the run's seed — never per generator, whose
  independent gamma draws would add up to a smoother process than the ``cv`` asked for;
- within a segment of rate r and length d the global count is N = r x d rounded at random
  (the engine's count rule, docs/bench.md) and N is cut multinomially, N_g ~ Mult(N, p): a
  Poisson process given its count is N uniform times, and handing each time to generator g
  with chance p_g gives each generator N_g uniform times — independent Poisson streams of
  rates r x p_g that superpose back to the one process (superposition of independent Poisson
  streams is Poisson), with sum N_g = N exactly; each generator's engine run sends exactly
  N_g in the segment (:func:`run_generator`);
- ``constant``: the global clock's slots i / r go to the streams in turn, stream g of G
  starting at phase g / G of its own gap, so equal shares interleave into the one clock
  (not G clocks in phase, which send waves); counts round(r x d) cut by largest remainders;
- closed loop has no schedule: the concurrency is shared out, at least 1 per generator.

Deadline rule (:func:`deadline_headers`): a spec's ``deadline_ms`` (None: none) goes with every
request it sends, as the server reads it (docs/serve.md): over REST the header
``lanes-timeout-ms: <ms>``, a plain decimal number; over gRPC (a ``grpc://`` target) the call's
``grpc-timeout: <n><unit>``, gRPC's wire format of at most 8 digits and a unit — whole
milliseconds as ``<n>m``, else the microseconds rounded up as ``<n>u`` (the milliseconds
rounded up from 100 s, past 8 digits), so the deadline is never shorter than asked. The load
engine sends either as it is and does not enforce it itself: the server answers 504
(``DEADLINE_EXCEEDED``). Over REST the deadline holds until the request's batch starts (one
still queued then never runs); over gRPC the server applies gRPC's rule, the whole call within
the deadline (docs/serve.md).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from lanes.bench import engine
from lanes.bench.result import Result, merge
from lanes.errors import BAD_ARGUMENT, LanesError

_MIN_RATE = 1e-3
"""Segments below this rate (req/s) send nothing and are skipped."""
_COUNT_MARGIN = 1e-7
"""Relative excess of an exact-count segment's rate over ``count / duration`` (module doc)."""
_START_MARGIN_S = 1.0
"""How far ahead of now generators are told to start: time to spawn and import."""
_GRPC_TIMEOUT_MAX = 10**8
"""``grpc-timeout`` values take at most 8 digits."""


def spec_for(
    *,
    url: str,
    model: str,
    corpus: str,
    stream: Sequence[dict[str, Any]],
    arrival: str,
    timeout_s: float,
    warmup_s: float,
    start_unix: float,
    deadline_ms: float | None = None,
) -> dict[str, Any]:
    """One generator's spec, a JSON-able dict (everything a remote host would need).

    ``stream`` is the generator's part of the run's schedule, one of :func:`split`'s lists;
    ``deadline_ms`` the deadline each of its requests carries (None: none; module docstring).
    """
    return {
        "url": url,
        "model": model,
        "corpus": corpus,
        "segments": [dict(seg) for seg in stream],
        "arrival": arrival,
        "timeout_s": timeout_s,
        "warmup_s": warmup_s,
        "start_unix": start_unix,
        "deadline_ms": deadline_ms,
    }


def deadline_headers(url: str, deadline_ms: float | None) -> list[str]:
    """The header lines that carry ``deadline_ms`` to the server at ``url`` (module docstring):
    none without a deadline, ``grpc-timeout`` for a ``grpc://`` URL, else
    ``lanes-timeout-ms``."""
    if deadline_ms is None:
        return []
    ms = float(deadline_ms)
    if url.startswith("grpc://"):
        return [f"grpc-timeout: {grpc_timeout(ms)}"]
    text = str(int(ms)) if ms.is_integer() else repr(ms)
    return [f"lanes-timeout-ms: {text}"]


def grpc_timeout(ms: float) -> str:
    """``ms`` as a ``grpc-timeout`` value (at most 8 digits and a unit): ``<n>m`` for whole
    milliseconds, else ``<n>u``, the microseconds rounded up (at least 1), or where those
    take 9 digits (100 s or more) the milliseconds rounded up: never a shorter deadline."""
    if float(ms).is_integer():
        return f"{int(ms)}m"
    us = max(1, math.ceil(ms * 1000 - 1e-6))
    return f"{us}u" if us < _GRPC_TIMEOUT_MAX else f"{math.ceil(ms)}m"


def split(
    load: dict[str, Any], shares: Sequence[float], connections: int
) -> list[list[dict[str, Any]]]:
    """The run's one global schedule cut into streams, one per generator (see the module
    docstring for the rule).

    ``load`` holds the run's total ``rate`` (None: closed loop, ``concurrency`` the total),
    ``arrival``, ``cv``, ``trace``, ``segment_s``, ``warmup_s``, ``measure_s`` and ``seed``;
    ``shares`` (summing to 1) are the generators' parts of it. Each stream is a list of
    segments ``{"phase", "offset_s", "duration_s", "rate", "count", "connections", "seed"}``:
    in open loop the engine runs ``count`` sends in the segment, exactly; a segment with
    none is left out.
    """
    total = float(sum(shares))
    p = np.asarray([s / total for s in shares], dtype=float)
    streams: list[list[dict[str, Any]]] = [[] for _ in shares]
    base = int(load["seed"])
    for phase_index, phase in enumerate(("warmup", "measure")):
        for k, (offset, length, rate) in enumerate(segments(load, phase)):
            tag = phase_index * 10_000 + k
            for g, stream in enumerate(streams):
                seg = {"phase": phase, "offset_s": offset, "duration_s": length, "rate": rate}
                conns = connections
                if rate is None:  # closed loop: the concurrency is shared out, no schedule
                    conns = max(1, round(int(load["concurrency"]) * float(p[g])))
                seed = _stream_seed(base, g, tag)
                stream.append({**seg, "count": None, "connections": conns, "seed": seed})
            if rate is None:
                continue
            if load["arrival"] == "constant":
                _split_constant(streams, p, rate, offset, length)
            else:
                rng = np.random.default_rng([base, 2, tag])
                expected = rate * length
                n = math.floor(expected) + int(rng.random() < expected - math.floor(expected))
                for stream, count in zip(streams, rng.multinomial(n, p), strict=True):
                    stream[-1]["count"] = int(count)
                    stream[-1]["rate"] = count / length
    return [[seg for seg in stream if seg["count"] != 0] for stream in streams]


def _split_constant(
    streams: list[list[dict[str, Any]]], p: Any, rate: float, offset: float, length: float
) -> None:
    """Slot i of the global clock (at i / rate) goes to the streams in turn: stream g of G
    runs at rate x p_g from phase g / G of its own gap, so equal shares interleave exactly;
    the counts are round(rate x length) cut by largest remainders."""
    n = round(rate * length)
    exact = n * p
    counts = np.floor(exact).astype(int)
    for g in np.argsort(-(exact - counts), kind="stable")[: n - int(counts.sum())]:
        counts[g] += 1
    for g, stream in enumerate(streams):
        own = rate * float(p[g])
        seg = stream[-1]
        seg["rate"] = own
        seg["count"] = int(counts[g])
        seg["offset_s"] = offset + (g / len(streams)) / own
        seg["duration_s"] = int(counts[g]) / own


def _stream_seed(base: int, stream: int, tag: int) -> int:
    return (base * 7919 + stream) * 100_003 + tag


def segments(spec: dict[str, Any], phase: str) -> list[tuple[float, float, float | None]]:
    """``(offset_s, duration_s, rate)`` of a phase (``warmup`` or ``measure``) from the start.

    ``rate`` is None in closed loop. See the module docstring for the rule.
    """
    warm, measure = float(spec["warmup_s"]), float(spec["measure_s"])
    begin, length = (0.0, warm) if phase == "warmup" else (warm, measure)
    if length <= 0:
        return []
    rate = spec["rate"]
    arrival = spec["arrival"]
    if rate is None or arrival in ("poisson", "constant"):
        return [(begin, length, rate)]
    seg = float(spec["segment_s"])
    n = max(1, math.ceil(length / seg - 1e-9))
    bounds = [(begin + i * seg, min(seg, length - i * seg)) for i in range(n)]
    if arrival == "bursty":
        cv = float(spec["cv"])
        rng = np.random.default_rng([int(spec["seed"]), 0 if phase == "warmup" else 1])
        rates = rng.gamma(1.0 / cv**2, float(rate) * cv**2, size=n)
    else:  # trace
        trace = spec["trace"]
        if spec.get("trace_fit", "rate") == "time":
            times = np.asarray(trace, dtype=float)
            span = float(times[-1]) if times[-1] > 0 else 1.0
            trace = times / (float(rate) / (len(times) / span))
        rates = _trace_rates(trace, begin, length, seg, n) * float(rate)
    return [(o, d, float(r)) for (o, d), r in zip(bounds, rates, strict=True) if r >= _MIN_RATE]


def _trace_rates(trace: Sequence[float], begin: float, length: float, seg: float, n: int) -> Any:
    """Per-segment arrival counts of the (looped) trace over ``[begin, begin+length)``,
    normalised to mean 1 over the phase."""
    times = np.asarray(trace, dtype=float)
    span = float(times[-1]) if times[-1] > 0 else 1.0
    counts = np.zeros(n)
    for i in range(n):
        lo, hi = begin + i * seg, min(begin + (i + 1) * seg, begin + length)
        counts[i] = _count_looped(times, span, lo, hi) / (hi - lo)
    mean = counts.mean()
    return counts / mean if mean > 0 else np.ones(n)


def _count_looped(times: Any, span: float, lo: float, hi: float) -> int:
    total = 0
    k = math.floor(lo / span)
    while k * span < hi:
        a, b = lo - k * span, hi - k * span
        total += int(np.searchsorted(times, b, "left") - np.searchsorted(times, a, "left"))
        k += 1
    return total


def run_generator(spec: dict[str, Any]) -> dict[str, Any]:
    """Offer the spec's stream and return the measurement's result (engine JSON + ``model``).

    Warm-up replies are discarded. Segments start at ``start_unix + offset``; all of them
    issue for their duration, then their in-flight requests finish (each within the timeout).
    An open-loop segment sends exactly its ``count``: the engine runs at ``count /
    duration`` (poisson: times ``1 + 1e-7``, so that no rounding of the duration makes the
    count rule of docs/bench.md round below ``count``) for the duration, capped at ``count``.
    """
    start = float(spec["start_unix"])
    handles: list[tuple[dict[str, Any], engine.Handle]] = []
    for seg in spec["segments"]:
        delay = start + float(seg["offset_s"]) - time.time()
        if delay > 0:
            time.sleep(delay)  # pacing to the shared start, not synchronising a test
        handles.append((seg, engine.start(spec["url"], **engine_options(spec, seg))))
    measured = [
        (float(seg["offset_s"]), h.result()) for seg, h in handles if seg["phase"] == "measure"
    ]
    if not measured:
        raise LanesError(BAD_ARGUMENT, "a generator measured nothing (every segment was empty)")
    return {**_merge_segments(measured, float(spec["warmup_s"])), "model": spec["model"]}


def engine_options(spec: dict[str, Any], seg: dict[str, Any]) -> dict[str, Any]:
    """The load engine's options (:func:`lanes.bench.engine.spec`) for segment ``seg`` of
    ``spec``: its corpus, timeout and deadline headers, the segment's duration, seed and
    connections, and in open loop its rate and exact count (:func:`run_generator`)."""
    kw: dict[str, Any] = {
        "corpus": spec["corpus"],
        "timeout": float(spec["timeout_s"]),
        "headers": deadline_headers(spec["url"], spec.get("deadline_ms")),
        "duration": float(seg["duration_s"]),
        "seed": int(seg["seed"]),
        "threads": 1,
        "connections": int(seg["connections"]),
    }
    if seg["count"] is not None:
        rate = float(seg["rate"])
        if spec["arrival"] == "constant":
            kw["arrival"] = "constant"
        else:  # a hair over count / duration: never rounded below count, capped at it
            rate *= 1 + _COUNT_MARGIN
        kw.update(rate=rate, requests=int(seg["count"]))
    return kw


def _merge_segments(measured: Sequence[tuple[float, Result]], origin: float) -> dict[str, Any]:
    """One result from segments run one after another, each ``(offset_s, result)``.

    :func:`merge` lays runs side by side; segments ran in sequence, so each one's sends series
    is placed at its offset from the measurement's start ``origin`` (``sends_10ms.start_ns``)
    and its per-second points shifted by the whole seconds of that offset (a segment that
    starts within a second counts from that second), before the exact merge, which adds the
    points that land on one second. The origin is the phase's, not the first segment's, which
    may have been left out (no sends).
    """
    placed = []
    for offset, r in measured:
        sends = dict(r.data.get("sends_10ms") or {"bin_ms": 10, "counts": []})
        sends["start_ns"] = round((offset - origin) * 1e9)
        shift = math.floor(offset - origin + 1e-9)
        points = [{**p, "second": int(p["second"]) + shift} for p in r.data.get("timeseries", [])]
        placed.append(Result({**r.data, "sends_10ms": sends, "timeseries": points}))
    return dict(merge(placed).data)


def launch(specs: Sequence[dict[str, Any]], deadline_s: float) -> list[Result]:
    """Run each spec in its own process (``python -m lanes.lab.generators``) and collect the
    results in order; a generator that fails or outlives ``deadline_s`` raises."""
    procs = []
    for spec in specs:
        p = subprocess.Popen(
            [sys.executable, "-m", "lanes.lab.generators"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert p.stdin is not None
        p.stdin.write(json.dumps(spec).encode())
        p.stdin.close()
        p.stdin = None  # written and closed: communicate() must not touch it
        procs.append(p)
    out: list[Result] = []
    end = time.monotonic() + deadline_s
    try:
        for p in procs:
            stdout, stderr = _communicate(p, max(1.0, end - time.monotonic()))
            if p.returncode != 0:
                tail = stderr.decode(errors="replace").strip().splitlines()[-1:] or ["?"]
                raise LanesError(BAD_ARGUMENT, f"a load generator failed: {tail[0]}")
            out.append(Result.from_json(stdout.decode()))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return out


def _communicate(p: subprocess.Popen[bytes], timeout: float) -> tuple[bytes, bytes]:
    try:
        stdout, stderr = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise LanesError(BAD_ARGUMENT, f"a load generator ran past {timeout:.0f} s") from None
    return stdout, stderr


def start_time() -> float:
    """A shared start a little ahead of now, so every generator has spawned by then."""
    return time.time() + _START_MARGIN_S


def main() -> int:
    """``python -m lanes.lab.generators``: spec JSON on stdin → result JSON on stdout."""
    spec = json.loads(sys.stdin.read())
    try:
        result = run_generator(spec)
    except LanesError as err:
        print(f"{err.code}: {err.message}", file=sys.stderr)
        return 2
    sys.stdout.write(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
