#!/usr/bin/env python3
"""REST against gRPC on one ``lanes serve``, closed loop, with one client for both.

    .venv/bin/python bench/serve/peers/closed_loop.py [--model identity] [--repeats 3]
        [--seconds 5] [--connections 128] [--out DIR]

One ``lanes serve`` start (the race's settings: one CPU executor, one intra-op thread, the
race's repository and JSON body for ``--model``), then per repeat ``lanes bench`` closed loop
at ``--connections`` over REST and over gRPC (the same body, sent as a ``ModelInferRequest``
with ``--kserve-model``; its streams on one HTTP/2 connection), in alternating order, one
sender thread each. A step records the replies per second, and the CPU per reply of the
server (its process group, from /proc) and of the client (this script's children). Writes
``closed-loop.json`` to ``--out`` and prints medians (min-max) per protocol and the
gRPC/REST ratio per repeat.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run  # noqa: E402


def step(
    protocol: str, model: str, body: Path, args: argparse.Namespace, pid: int
) -> dict[str, Any]:
    out = args.out / "runs" / f"closed-{protocol}.json"
    if protocol == "rest":
        target = [run.infer_url("lanes", model), "-H", "Content-Type: application/json"]
    else:
        target = [f"grpc://127.0.0.1:{run.PORTS['lanes'] + 1}", "--kserve-model", model]
    cmd = [
        str(run.LANES_VENV / "bin" / "lanes"), "bench", *target, "--body-file", str(body),
        "-c", str(args.connections), "-t", "1", "-d", f"{args.seconds:g}s", "-q",
        "--json", str(out),
    ]  # fmt: skip
    server0, client0 = run.group_cpu_s(pid), run.children_cpu_s()
    subprocess.run(cmd, check=True)
    server1, client1 = run.group_cpu_s(pid), run.children_cpu_s()
    result = json.loads(out.read_text())
    replies = max(int(result["requests"]), 1)
    return {
        "protocol": protocol,
        "command": shlex.join(cmd),
        "rps": result["rps"],
        "errors": sum(result["errors"].values()),
        "latency_ms": result["latency_ms"],
        "server_cpu_us_per_request": (server1 - server0) * 1e6 / replies,
        "client_cpu_us_per_request": (client1 - client0) * 1e6 / replies,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="identity", choices=sorted(run.models.MODELS))
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--connections", type=int, default=128)
    p.add_argument("--out", type=Path, default=HERE / "out-closed")
    args = p.parse_args()
    (args.out / "runs").mkdir(parents=True, exist_ok=True)
    (args.out / "logs").mkdir(exist_ok=True)
    repo = run.repository(args.out, args.model)
    body = run.body_file(args.out, args.model)
    steps: list[dict[str, Any]] = []
    log = args.out / "logs" / "lanes.log"
    with run.running("lanes", repo, args.model, body, log) as pid:
        step("grpc", args.model, body, args, pid)  # warm the gRPC path
        for repeat in range(args.repeats):
            order = ("rest", "grpc") if repeat % 2 == 0 else ("grpc", "rest")
            for protocol in order:
                s = {
                    "repeat": repeat,
                    "model": args.model,
                    **step(protocol, args.model, body, args, pid),
                }
                steps.append(s)
                run.log(
                    f"  {repeat} {protocol:4}  {s['rps']:9,.0f} req/s  server "
                    f"{s['server_cpu_us_per_request']:5.1f} µs  client "
                    f"{s['client_cpu_us_per_request']:5.1f} µs  errors {s['errors']}"
                )
                (args.out / "closed-loop.json").write_text(json.dumps(steps, indent=1) + "\n")
    for protocol in ("rest", "grpc"):
        mine = [s for s in steps if s["protocol"] == protocol]
        cell = {
            k: (
                statistics.median(s[k] for s in mine),
                min(s[k] for s in mine),
                max(s[k] for s in mine),
            )
            for k in ("rps", "server_cpu_us_per_request", "client_cpu_us_per_request")
        }
        print(
            f"{protocol}: "
            + ", ".join(f"{k} {m:,.1f} ({lo:,.1f}-{hi:,.1f})" for k, (m, lo, hi) in cell.items())
        )
    ratios = [
        next(s["rps"] for s in steps if s["repeat"] == r and s["protocol"] == "grpc")
        / next(s["rps"] for s in steps if s["repeat"] == r and s["protocol"] == "rest")
        for r in range(args.repeats)
    ]
    print("gRPC/REST replies per second, per repeat: " + ", ".join(f"{x:.2f}" for x in ratios))


if __name__ == "__main__":
    main()
