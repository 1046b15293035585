"""Load generators: separate processes, each a pure function from a spec to a result JSON.

The field's lab ran "1-10 load machines x 1-10 cloned traffic groups". Here a **generator** is
one process offering one model's share of a level: a weighted mix at total rate R is exactly a
set of independent streams at rates R x w_i (the superposition of independent Poisson streams
is Poisson), so the runner starts one generator per mix entry and clone, each at
R x w_i / clones, and gets per-model histograms for free and the total by an exact HdrHistogram
merge (:func:`lanes.bench.merge`).

A generator reads its spec (JSON, :func:`spec_for`) on stdin and writes its result (the load
engine's JSON, docs/bench.md, plus ``"model"``) on stdout; it touches no file and no state of
the runner, so it could run on another host given the same spec and a synchronised clock
(``start_unix``). :func:`run_generator` is that function; ``python -m lanes.lab.generators``
is the process.

Schedule rule (:func:`segments`): the warm-up and the measurement are each cut into segments of
``segment_s`` with a rate each, started at their offsets from ``start_unix`` (the next segment
starts while the last one's replies are still arriving, so the load never pauses):

- ``poisson`` / ``constant``: one segment per phase at the generator's rate;
- ``bursty``: segment rates drawn from a gamma law of mean = the rate and coefficient of
  variation ``cv`` (seeded), Poisson within a segment — a doubly stochastic (Cox) process;
- ``trace``: the trace's arrivals counted per ``segment_s`` from its start (looped when short),
  scaled so that the phase's mean rate is the generator's rate, Poisson within a segment;
- closed loop: one segment per phase at ``connections`` = the generator's concurrency.
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
_START_MARGIN_S = 1.0
"""How far ahead of now generators are told to start: time to spawn and import."""


def spec_for(
    *,
    url: str,
    model: str,
    corpus: str,
    rate: float | None,
    concurrency: int | None,
    arrival: str,
    cv: float,
    trace: Sequence[float] | None,
    segment_s: float,
    warmup_s: float,
    measure_s: float,
    connections: int,
    timeout_s: float,
    seed: int,
    start_unix: float,
) -> dict[str, Any]:
    """One generator's spec, a JSON-able dict (everything a remote host would need)."""
    return {
        "url": url,
        "model": model,
        "corpus": corpus,
        "rate": rate,
        "concurrency": concurrency,
        "arrival": arrival,
        "cv": cv,
        "trace": list(trace) if trace is not None else None,
        "segment_s": segment_s,
        "warmup_s": warmup_s,
        "measure_s": measure_s,
        "connections": connections,
        "timeout_s": timeout_s,
        "seed": seed,
        "start_unix": start_unix,
    }


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
        rates = _trace_rates(spec["trace"], begin, length, seg, n) * float(rate)
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
    """Offer the spec's load and return the measurement's result (engine JSON + ``model``).

    Warm-up replies are discarded. Segments start at ``start_unix + offset``; all of them
    issue for their duration, then their in-flight requests finish (each within the timeout).
    """
    start = float(spec["start_unix"])
    opts: dict[str, Any] = {
        "corpus": spec["corpus"],
        "timeout": float(spec["timeout_s"]),
        "threads": 1,
        "seed": int(spec["seed"]),
    }
    handles: list[tuple[str, engine.Handle]] = []
    offsets: list[tuple[float, float, float | None]] = []
    for phase in ("warmup", "measure"):
        for i, (offset, duration, rate) in enumerate(segments(spec, phase)):
            offsets.append((offset, duration, rate))
            delay = start + offset - time.time()
            if delay > 0:
                time.sleep(delay)  # pacing to the shared start, not synchronising a test
            kw = dict(opts, duration=duration, seed=int(spec["seed"]) * 1000 + i)
            if rate is None:
                kw["connections"] = int(spec["concurrency"])
            else:
                kw.update(rate=rate, connections=int(spec["connections"]))
                if spec["arrival"] == "constant":
                    kw["arrival"] = "constant"
            handles.append((phase, engine.start(spec["url"], **kw)))
    measured = [
        (o, h.result())
        for (phase, h), (o, _, _) in zip(handles, offsets, strict=True)
        if phase == "measure"
    ]
    if not measured:
        raise LanesError(BAD_ARGUMENT, "a generator measured nothing (every segment was empty)")
    if len(measured) == 1:
        return {**measured[0][1].data, "model": spec["model"]}
    return {**_merge_segments(measured), "model": spec["model"]}


def _merge_segments(measured: Sequence[tuple[float, Result]]) -> dict[str, Any]:
    """One result from segments run one after another, each ``(offset_s, result)``.

    :func:`merge` lays runs side by side; segments ran in sequence, so each one's sends series
    is placed at its offset from the first segment's start (``sends_10ms.start_ns``) and its
    per-second series shifted by the same offset, before the exact merge.
    """
    first = measured[0][0]
    placed = []
    for offset, r in measured:
        sends = dict(r.data.get("sends_10ms") or {"bin_ms": 10, "counts": []})
        sends["start_ns"] = round((offset - first) * 1e9)
        placed.append(Result({**r.data, "sends_10ms": sends}))
    merged = dict(merge(placed).data)
    merged["timeseries"] = [
        {**p, "second": int(p["second"] + round(o - first))}
        for o, r in measured
        for p in r.data.get("timeseries", [])
    ]
    return merged


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
