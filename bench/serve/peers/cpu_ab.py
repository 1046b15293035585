#!/usr/bin/env python3
"""Server CPU per request of ``lanes serve`` builds, REST against gRPC, as an interleaved A/B.

    .venv/bin/python bench/serve/peers/cpu_ab.py NAME=PYTHONPATH [NAME=PYTHONPATH ...]
        [--rates 400,1600] [--clients rest,grpc,grpcio] [--repeats 3] [--seconds 6]
        [--model identity] [--out DIR]

Each variant is a ``lanes`` package directory put first on ``PYTHONPATH`` (a copy of
``python/`` with the build's ``_core.abi3.so``; ``-`` for the installed one). For each repeat,
the variants run in turn (their order reversed every other repeat): one ``lanes serve`` start,
then every client at every rate, each a fixed-rate step of ``--seconds`` under ``perf stat``
(when perf is there) of the server's process. A step records the server's CPU per request
(its process group, from /proc), and per request its context switches, wake-ups and the
socket, epoll and futex system calls: where a protocol's extra CPU goes is in how many hops
and system calls it costs, not only in its codec.

The clients (none written here):

- ``rest``: oha at a fixed rate (the race's ``grpc`` step's command, :mod:`protocols`);
- ``grpc``: ghz at a fixed rate, the same as the race's gRPC side (grpc-go: its BDP
  estimator answers nearly every response with a WINDOW_UPDATE and a PING at low rates per
  connection, which the server must read and acknowledge);
- ``grpcio``: ``grpc.aio`` (gRPC C-core, what ``tritonclient.grpc`` runs on) sending the
  same pre-serialised ``ModelInferRequest`` on 16 channels at a fixed rate; C-core spaces its
  BDP pings in time, so the server pays one read and one write per call.

Writes every step to ``--out``/cpu_ab.json and prints medians (min-max) per variant, client
and rate.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import json_format
from tritonclient.grpc import service_pb2

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run  # noqa: E402

GRPCIO_CHANNELS = 16  # as ghz's --connections in the race
EVENTS = {
    "context_switches": "context-switches",
    "wakeups": "sched:sched_wakeup",
    "writev": "syscalls:sys_enter_writev",
    "write": "syscalls:sys_enter_write",
    "recvfrom": "syscalls:sys_enter_recvfrom",
    "epoll_wait": "syscalls:sys_enter_epoll_wait",
    "futex": "syscalls:sys_enter_futex",
}


def grpcio_client(target: str, request: Path, rate: float, seconds: float) -> dict[str, Any]:
    """A fixed-rate ``grpc.aio`` run: ``rate`` calls a second for ``seconds``, spread over
    :data:`GRPCIO_CHANNELS` channels, latency from each call's intended send time."""
    body = request.read_bytes()

    async def drive() -> dict[str, Any]:
        channels = [grpc.aio.insecure_channel(target) for _ in range(GRPCIO_CHANNELS)]
        calls = [c.unary_unary("/inference.GRPCInferenceService/ModelInfer") for c in channels]
        for call in calls:  # connect every channel first
            await call(body, timeout=5)
        latencies: list[float] = []
        errors = 0

        async def one(i: int, due: float) -> None:
            nonlocal errors
            try:
                await calls[i % len(calls)](body, timeout=5)
                latencies.append(time.perf_counter() - due)
            except grpc.RpcError:
                errors += 1

        start = time.perf_counter()
        tasks = []
        for i in range(int(rate * seconds)):
            due = start + i / rate
            wait = due - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            tasks.append(asyncio.ensure_future(one(i, due)))
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - start
        for c in channels:
            await c.close()
        latencies.sort()
        n = max(len(latencies), 1)
        return {
            "requests": len(latencies),
            "errors": errors,
            "rps": len(latencies) / elapsed,
            "latency_ms": {
                "p50": latencies[n // 2] * 1e3 if latencies else float("nan"),
                "p99": latencies[min(int(n * 0.99), n - 1)] * 1e3 if latencies else float("nan"),
            },
        }

    return asyncio.run(drive())


def grpcio_request(out: Path, model: str) -> Path:
    """The serialised ``ModelInferRequest`` of the race's gRPC body (raw input contents)."""
    spec = json.loads(run.grpc_body_file(out, model).read_text())
    message = service_pb2.ModelInferRequest()
    json_format.ParseDict(spec, message)
    path = out / "bodies" / f"{model}.grpc.bin"
    path.write_bytes(message.SerializeToString())
    return path


def step(
    client: str, model: str, rate: float, seconds: float, out: Path, pid: int
) -> dict[str, Any]:
    """One fixed-rate step of ``client`` with perf's counters of the server's process."""
    counters = out / "runs" / "perf-stat.csv"
    perf = None
    if shutil.which("perf"):
        events = ",".join(EVENTS.values())
        perf = subprocess.Popen(
            ["perf", "stat", "-x,", "-e", events, "-p", str(pid), "-o", str(counters)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(0.2)
    if client == "grpcio":
        request = grpcio_request(out, model)
        cpu0 = run.group_cpu_s(pid)
        cmd = [sys.executable, __file__, "--client", str(request), f"{rate:g}", f"{seconds:g}"]
        result = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        cpu1 = run.group_cpu_s(pid)
        result["server_cpu_us_per_request"] = (cpu1 - cpu0) * 1e6 / max(result["requests"], 1)
    else:
        protocol = "rest" if client == "rest" else "grpc"
        result = run.fixed_rate(protocol, "lanes", model, rate, seconds, out, pid)
    if perf is not None:
        perf.send_signal(2)
        perf.wait()
        per = max(result["requests"], 1)
        names = {v: k for k, v in EVENTS.items()}
        for line in counters.read_text().splitlines():
            fields = line.split(",")
            if len(fields) > 2 and fields[2] in names and fields[0].isdigit():
                result[f"{names[fields[2]]}_per_request"] = int(fields[0]) / per
    return result


def summarise(records: list[dict[str, Any]]) -> None:
    keys = sorted({(r["variant"], r["client"], r["rate"]) for r in records})
    print(
        "| variant | client | rate | server CPU µs/req | cs/req | wake-ups/req | "
        "writev/req | recvfrom/req | achieved req/s | p50 / p99 ms |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")

    def cell(rs: list[dict[str, Any]], key: str, fmt: str = "{:.0f}") -> str:
        vs = [r[key] for r in rs if key in r]
        if not vs:
            return "-"
        m = fmt.format(statistics.median(vs))
        return f"{m} ({fmt.format(min(vs))}-{fmt.format(max(vs))})" if len(vs) > 1 else m

    for variant, client, rate in keys:
        rs = [
            r for r in records if (r["variant"], r["client"], r["rate"]) == (variant, client, rate)
        ]
        p50 = statistics.median(r["latency_ms"]["p50"] for r in rs)
        p99 = statistics.median(r["latency_ms"]["p99"] for r in rs)
        per_request = ("context_switches", "wakeups", "writev", "recvfrom")
        cells = [
            variant,
            client,
            f"{rate:g}",
            cell(rs, "server_cpu_us_per_request"),
            *(cell(rs, f"{name}_per_request", "{:.2f}") for name in per_request),
            f"{statistics.median(r['rps'] for r in rs):.0f}",
            f"{p50:.2f} / {p99:.2f}",
        ]
        print("| " + " | ".join(cells) + " |")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--client":
        request, rate, seconds = Path(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
        target = f"127.0.0.1:{run.PORTS['lanes'] + 1}"
        print(json.dumps(grpcio_client(target, request, rate, seconds)))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("variants", nargs="+", help="NAME=PYTHONPATH (- for the installed)")
    parser.add_argument("--rates", default="400,1600")
    parser.add_argument("--clients", default="rest,grpc,grpcio")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--model", default="identity")
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "lanes-cpu-ab")
    args = parser.parse_args()
    variants = [tuple(v.split("=", 1)) for v in args.variants]
    rates = [float(r) for r in args.rates.split(",")]
    clients = args.clients.split(",")
    out: Path = args.out
    for sub in ("runs", "logs", "bodies"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    repo = run.repository(out, args.model)
    body = run.body_file(out, args.model)
    records: list[dict[str, Any]] = []
    for repeat in range(args.repeats):
        for name, path in variants if repeat % 2 == 0 else variants[::-1]:
            if path == "-":
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = path
            with run.running("lanes", repo, args.model, body, out / "logs" / f"{name}.log") as pid:
                run.fixed_rate("grpc", "lanes", args.model, 200, 1, out, pid)  # warm gRPC
                for client in clients:
                    for rate in rates:
                        r = step(client, args.model, rate, args.seconds, out, pid)
                        r.update(variant=name, client=client, rate=rate, repeat=repeat)
                        records.append(r)
                        run.log(
                            f"  {name} {client} {rate:g}: "
                            f"{r['server_cpu_us_per_request']:.0f} µs/request, "
                            f"{r.get('context_switches_per_request', float('nan')):.2f} cs"
                        )
                        (out / "cpu_ab.json").write_text(json.dumps(records, indent=1))
    summarise(records)


if __name__ == "__main__":
    main()
