"""10x overload against ``lanes serve``: no crash, flat memory, goodput near capacity, and every
excess request refused (429/504) quickly.

Method:

1. ``lanes serve`` on a one-model repository (``affine``, bench/reliability/server.py) on one
   simulated GPU (``sim:1``): each batch holds the device ``fixed_ms + per_item_ms * rows``
   (10 + 1 * rows ms by default, batches of up to 16, 4 batches queued at most), so the device,
   not this host's CPUs, sets the capacity — the situation the overload limits exist for.
   With ``--zoo MODEL`` instead: the built-in demo zoo (``lanes serve`` without ``--models``)
   on ``--devices`` (default ``auto``: one single-threaded executor per core), every request
   one 32x32 grayscale image as a ``UINT8`` tensor for ``MODEL`` — a CPU-bound model, whose
   load generator shares this host's cores with the server.
2. **Capacity** (skipped with ``--capacity``): ``lanes bench`` open loop (Poisson), no deadline, for
   ``--step-seconds`` at rising rates (x1.5 from ``--start-rate`` until a step fails, then
   three bisections); a step passes when p99 < SLO and every reply is a 200. The capacity is
   the highest passing rate.
3. **Overload**: ``lanes bench`` offers 10 x capacity (``--factor``), open loop (Poisson), for
   ``--minutes``, every request with a deadline (``lanes-timeout-ms``, ``--deadline-ms``, 20 ms:
   the SLO less about one batch, since a deadline holds until the batch starts; a request still
   queued at it is answered 504 without running). Meanwhile a sampler reads the server's
   resident memory every ``--sample-seconds``, and a probe (its own open-loop Poisson stream
   at ``--probe-rate``, part of the offered load) records each of its requests' status and
   latency from its intended send time: ``lanes bench`` reports latency for all replies
   together, the probe gives the refusals' latency (429 and 504 apart) and the successes'.
4. Reported: goodput (200s per second over the run and after the first minute) against the
   capacity, the share of the probe's 200s within the SLO, the status counts, latency by
   status, memory over time (after the first minute: first, last, min, max), and whether the
   server is alive and ready at the end.

Run it under ``flock /tmp/lanes-bench.lock`` so that load tests of different people on this
shared host never overlap:

    flock /tmp/lanes-bench.lock .venv/bin/python bench/reliability/overload.py \
        [--minutes 10] [--capacity R] [--trace-events N] [--json F]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server import BIN, REQUEST, ModelKnobs, Server, percentiles, write_repository


@dataclass(frozen=True)
class Target:
    """What the load sends: the model, the infer URL and the JSON body."""

    model: str
    url: str
    body: bytes


def zoo_body() -> bytes:
    """One 32x32 grayscale image (a fixed pattern) as a KServe v2 ``UINT8`` tensor for the
    zoo's ``image`` input."""
    pixels = [(i * 7) % 256 for i in range(32 * 32)]
    tensor = {"name": "image", "shape": [1, 32, 32], "datatype": "UINT8", "data": pixels}
    return json.dumps({"inputs": [tensor]}).encode()


def bench(
    target: Target, rate: float, seconds: float, deadline_ms: float | None, connections: int
) -> dict[str, Any]:
    """One ``lanes bench`` run against the model (open loop, Poisson), each request with
    ``lanes-timeout-ms: deadline_ms`` unless None; its JSON result."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [
            str(BIN / "lanes"), "bench", target.url, "--method", "POST",
            "--body", target.body.decode(), "-H", "Content-Type: application/json",
            "--rate", f"{rate:g}",
            "--duration", f"{seconds:g}s", "--connections", str(connections),
            "--json", str(out),
        ]  # fmt: skip
        if deadline_ms is not None:
            cmd += ["-H", f"lanes-timeout-ms: {deadline_ms:g}"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        result: dict[str, Any] = json.loads(out.read_text())
        result["command"] = " ".join(cmd)
        return result


def passes(result: dict[str, Any], slo_ms: float) -> bool:
    codes = result["status_codes"]
    ok = int(codes.get("200", 0))
    return ok > 0 and ok == result["requests"] and result["latency_ms"]["p99"] < slo_ms


def capacity(target: Target, args: argparse.Namespace) -> tuple[float, list[dict[str, Any]]]:
    """The highest rate passing :func:`passes`, and every step."""
    steps: list[dict[str, Any]] = []

    def step(rate: float) -> bool:
        r = bench(target, rate, args.step_seconds, None, args.connections)
        ok = passes(r, args.slo_ms)
        steps.append(
            {
                "rate": rate,
                "passed": ok,
                "rps": r["rps"],
                "p50_ms": r["latency_ms"]["p50"],
                "p99_ms": r["latency_ms"]["p99"],
                "status_codes": r["status_codes"],
            }
        )
        print(f"  capacity step {rate:.0f}/s: {'pass' if ok else 'fail'} {steps[-1]}")
        return ok

    return highest_passing(step, args.start_rate), steps


def highest_passing(step: Callable[[float], bool], start_rate: float) -> float:
    """The highest rate ``step`` passes: rates x1.5 from ``start_rate`` until one fails, then
    three bisections of the bracket [last pass, first fail]; 0 when the first fails."""
    low, high = 0.0, start_rate
    while step(high):
        low, high = high, high * 1.5
    for _ in range(3):
        mid = (low + high) / 2
        if step(mid):
            low = mid
        else:
            high = mid
    return low


def sample_memory(server: Server, every: float, stop: threading.Event) -> list[list[float]]:
    samples: list[list[float]] = []
    t0 = time.monotonic()
    while not stop.is_set():
        samples.append([round(time.monotonic() - t0, 1), server.rss_bytes() / 2**20])
        stop.wait(every)
    return samples


def memory_summary(memory: list[list[float]], every_s: float) -> dict[str, Any]:
    """The samples of :func:`sample_memory` and, after the first minute, their first, last,
    min, max and median (MiB)."""
    after = [mb for t, mb in memory if t >= 60]
    return {
        "every_s": every_s,
        "samples": [[t, round(mb, 1)] for t, mb in memory],
        "after_1min": {
            "first": round(after[0], 1) if after else None,
            "last": round(after[-1], 1) if after else None,
            "min": round(min(after), 1) if after else None,
            "max": round(max(after), 1) if after else None,
            "median": round(statistics.median(after), 1) if after else None,
        },
    }


async def probe(
    target: Target, rate: float, seconds: float, deadline_ms: float
) -> list[tuple[int, float]]:
    """(status, latency ms from the intended send) of an open-loop Poisson stream; status 0 for
    a failed request."""
    records: list[tuple[int, float]] = []
    headers = {"Content-Type": "application/json", "lanes-timeout-ms": f"{deadline_ms:g}"}
    timeout = aiohttp.ClientTimeout(total=10)
    async with aiohttp.ClientSession(timeout=timeout, headers=headers) as session:

        async def one(intended: float) -> None:
            try:
                async with session.post(target.url, data=target.body) as r:
                    await r.read()
                    status = r.status
            except (aiohttp.ClientError, asyncio.TimeoutError):
                status = 0
            records.append((status, (time.monotonic() - intended) * 1e3))

        await poisson(rate, seconds, one)
    return records


async def poisson(
    rate: float, seconds: float, one: Callable[[float], Coroutine[Any, Any, None]]
) -> None:
    """Calls ``one(intended send time)`` at Poisson arrivals of ``rate`` a second (seeded) for
    ``seconds``, each in its own task, and waits for all of them."""
    rng = random.Random(2)
    tasks: list[asyncio.Task[None]] = []
    start = at = time.monotonic()
    while True:
        at += rng.expovariate(rate)
        if at - start >= seconds:
            break
        await asyncio.sleep(max(0.0, at - time.monotonic()))
        tasks.append(asyncio.create_task(one(at)))
    await asyncio.gather(*tasks)


def overload(
    server: Server, target: Target, rate: float, args: argparse.Namespace
) -> dict[str, Any]:
    seconds = args.minutes * 60
    stop = threading.Event()
    memory: list[list[float]] = []
    sampler = threading.Thread(
        target=lambda: memory.extend(sample_memory(server, args.sample_seconds, stop))
    )
    probed: list[tuple[int, float]] = []
    prober = threading.Thread(
        target=lambda: probed.extend(
            asyncio.run(probe(target, args.probe_rate, seconds, args.deadline_ms))
        )
    )
    sampler.start()
    prober.start()
    connections = args.overload_connections
    result = bench(target, rate, seconds, args.deadline_ms, connections)
    prober.join()
    stop.set()
    sampler.join()
    if args.json:  # kept whole before anything reads it
        args.json.with_suffix(".bench.json").write_text(json.dumps(result))

    codes = {k: int(v) for k, v in result["status_codes"].items()}
    duration = float(result["duration_s"])
    series = result.get("timeseries", [])
    by_status: dict[int, list[float]] = {}
    for status, ms in probed:
        by_status.setdefault(status, []).append(ms)
    ok_ms = by_status.get(200, [])
    within = sum(ms < args.slo_ms for ms in ok_ms) / len(ok_ms) if ok_ms else 0.0
    return {
        "command": result["command"],
        "offered_rate": rate,
        "seconds": seconds,
        "scheduled": result.get("scheduled"),
        "replies": result["requests"],
        "status_codes": codes,
        "errors": result["errors"],
        "unfinished": result.get("unfinished"),
        "late_sends_fraction": result.get("late_sends_fraction"),
        "goodput_rps": codes.get("200", 0) / duration,
        "goodput_after_1min_rps": goodput_after(series, 60, seconds),
        "probe_200s_within_slo": round(within, 4),
        "goodput_within_slo_rps_est": codes.get("200", 0) / duration * within,
        "latency_all_ms": result["latency_ms"],
        "service_time_all_ms": result.get("service_time_ms"),
        "probe": {
            "rate": args.probe_rate,
            "status_codes": dict(Counter(s for s, _ in probed)),
            "latency_ms_by_status": {str(s): percentiles(v) for s, v in sorted(by_status.items())},
        },
        "memory_mib": memory_summary(memory, args.sample_seconds),
    }


def goodput_after(series: list[dict[str, Any]], from_s: float, to_s: float) -> float | None:
    """200s per second over the whole seconds in ``[from_s, to_s)`` (``lanes bench``'s
    ``timeseries``: replies and errors by completion second; status errors are the refusals)."""
    points = [p for p in series if from_s <= p["second"] < int(to_s)]
    if len(points) < 2:
        return None
    ok = sum(p["requests"] - p["errors"] for p in points)
    return ok / len(points)


def ready(url: str, path: str = "/v2/health/ready") -> bool:
    """Whether ``url + path`` answers 200 (the server's, or a model's, readiness)."""
    try:
        with urllib.request.urlopen(url + path, timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=10.0, help="overload duration")
    p.add_argument("--factor", type=float, default=10.0, help="offered load / capacity")
    p.add_argument("--capacity", type=float, help="skip the search: this rate (req/s)")
    p.add_argument("--start-rate", type=float, default=100.0)
    p.add_argument("--step-seconds", type=float, default=10.0)
    p.add_argument("--slo-ms", type=float, default=50.0, help="capacity: p99 below this")
    p.add_argument(
        "--deadline-ms", type=float, default=20.0, help="overload: each request's deadline"
    )
    p.add_argument("--connections", type=int, default=64, help="lanes bench, capacity steps")
    p.add_argument("--overload-connections", type=int, default=256)
    p.add_argument("--probe-rate", type=float, default=20.0)
    p.add_argument("--sample-seconds", type=float, default=2.0)
    p.add_argument("--devices", help="lanes serve --devices (default: sim:1, with --zoo auto)")
    p.add_argument(
        "--zoo",
        metavar="MODEL",
        help="overload this demo-zoo model (a CPU-bound one, e.g. char_cnn) instead of affine",
    )
    p.add_argument("--fixed-ms", type=float, default=ModelKnobs.fixed_ms)
    p.add_argument("--per-item-ms", type=float, default=ModelKnobs.per_item_ms)
    p.add_argument("--max-batch-size", type=int, default=ModelKnobs.max_batch_size)
    p.add_argument("--max-enqueued-batches", type=int, default=ModelKnobs.max_enqueued_batches)
    p.add_argument(
        "--trace-events",
        type=int,
        help="the server's --trace-events (its timeline ring, in jobs; default: the server's)",
    )
    p.add_argument("--json", type=Path, help="write the result here")
    args = p.parse_args()

    knobs = ModelKnobs(
        args.max_batch_size, args.max_enqueued_batches, args.fixed_ms, args.per_item_ms
    )
    with tempfile.TemporaryDirectory() as tmp:
        if args.zoo:
            serve_args = ["--devices", args.devices or "auto"]
            target = Target(args.zoo, "", zoo_body())
        else:
            repo = write_repository(Path(tmp) / "repo", knobs)
            serve_args = ["--models", str(repo), "--devices", args.devices or "sim:1"]
            target = Target("affine", "", REQUEST)
        serve_args += ["--port", "0", "--metrics-port", "off", "--grpc-port", "off"]
        if args.trace_events is not None:
            serve_args += ["--trace-events", str(args.trace_events)]
        server = Server(serve_args, Path(tmp) / "serve.log")
        try:
            print(server.line)
            if not ready(server.url, f"/v2/models/{target.model}/ready"):
                raise SystemExit(f"model {target.model!r} is not served: {server.line}")
            infer = f"{server.url}/v2/models/{target.model}/infer"
            target = Target(target.model, infer, target.body)
            if args.capacity is None:
                cap, steps = capacity(target, args)
            else:
                cap, steps = args.capacity, []
            print(f"capacity at p99 < {args.slo_ms:g} ms: {cap:.0f} req/s")
            run = overload(server, target, args.factor * cap, args)
            report: dict[str, Any] = {
                "server": " ".join(server.command),
                "model": {"zoo": args.zoo} if args.zoo else vars(knobs),
                "slo_ms": args.slo_ms,
                "deadline_ms": args.deadline_ms,
                "capacity_rps": cap,
                "capacity_steps": steps,
                "overload": run,
                "goodput_over_capacity": run["goodput_rps"] / cap,
                "alive_at_end": server.alive(),
                "ready_at_end": ready(server.url),
            }
            with urllib.request.urlopen(f"{server.url}/v2/models/{target.model}/stats") as r:
                report["model_stats"] = json.loads(r.read())["model_stats"][0]
        finally:
            report_exit = server.stop()
    report["exit_status"] = report_exit
    text = json.dumps(report, indent=1)
    if args.json:
        args.json.write_text(text)
    summary = {k: v for k, v in report.items() if k not in ("capacity_steps", "overload")}
    summary["overload"] = {k: v for k, v in run.items() if k != "memory_mib"}
    summary["memory_after_1min_mib"] = run["memory_mib"]["after_1min"]
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
