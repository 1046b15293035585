"""10x overload against ``lanes serve`` over KServe v2 gRPC: no crash, flat memory, goodput near
capacity, and every excess call refused (``RESOURCE_EXHAUSTED``/``DEADLINE_EXCEEDED``) quickly.

The gRPC twin of overload.py (same server, model and rules; its docstring states the method),
with ghz — grpc-go, a client nobody here wrote — instead of ``lanes bench``, which has no
gRPC mode:

1. ``lanes serve`` with ``affine`` on one simulated GPU (``sim:1``, 10 + 1 x rows ms a batch,
   batches of up to 16, 4 queued at most): the device sets the capacity, as a GPU does.
2. **Capacity** (skipped with ``--capacity``): ghz at fixed rates for ``--step-seconds``
   (x1.5 from ``--start-rate`` until a step fails, then three bisections); a step passes when
   every call is ``OK``, p99 < SLO and ghz achieved 90 % of the rate.
3. **Overload**: ghz offers ``--factor`` x capacity for ``--minutes``, every call with the
   KServe ``timeout`` parameter (``--deadline-ms``, in µs on the wire: a call still queued at
   it is answered ``DEADLINE_EXCEEDED`` without running) and ghz's own timeout at 5 s, so the
   deadline the server enforces is the request's. Meanwhile the server's resident memory is
   sampled, and a probe (``grpc.aio``, gRPC C-core as ``tritonclient.grpc`` uses it; its own
   open-loop Poisson stream, part of the load) records each call's code and latency from its
   intended send time: ghz reports one latency distribution for all calls, the probe splits
   it by code.
4. Reported as overload.py reports: goodput (``OK`` calls per second) against the capacity,
   codes, latency by code, memory after the first minute, alive and ready at the end.

ghz is found on ``PATH`` or where bench/serve/peers installs it
(``bench/serve/peers/.go/bin/ghz``). Run it under the bench lock:

    flock /tmp/lanes-bench.lock .venv/bin/python bench/reliability/overload_grpc.py \
        [--minutes 10] [--capacity R] [--json F]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import grpc
import numpy as np
from tritonclient.grpc import service_pb2

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serve" / "peers"))
from overload import highest_passing, memory_summary, poisson, ready, sample_memory
from protocols import GRPC_CONNECTIONS, ghz_command, grpc_request, read_ghz
from server import ModelKnobs, Server, percentiles, write_repository

ROOT = Path(__file__).resolve().parents[2]

PROTO = ROOT / "crates" / "lanes-kserve" / "proto" / "grpc_predict_v2.proto"
METHOD = "/inference.GRPCInferenceService/ModelInfer"
ACHIEVED_SHARE = 0.9


def find_ghz() -> Path:
    found = shutil.which("ghz")
    local = ROOT / "bench" / "serve" / "peers" / ".go" / "bin" / "ghz"
    if found:
        return Path(found)
    if local.is_file():
        return local
    raise SystemExit("ghz not found: on PATH or bench/serve/peers/.go/bin/ghz (see its README)")


def request(deadline_ms: float | None) -> dict[str, Any]:
    """``affine``'s call in protobuf's JSON mapping; with the KServe ``timeout`` (µs) if given."""
    body = grpc_request("affine", "x", np.array([[1, 2, 3, 4]], dtype=np.float32))
    if deadline_ms is not None:
        body["parameters"] = {"timeout": {"int64_param": str(int(deadline_ms * 1000))}}
    return body


def ghz(
    target: str, rate: float, seconds: float, deadline_ms: float | None, workers: int
) -> dict[str, Any]:
    """One bounded fixed-rate ghz run (at ``rate`` rounded: ghz takes whole calls a second);
    its report in protocols' common shape plus the raw counts, and the command."""
    with tempfile.TemporaryDirectory() as tmp:
        data, out = Path(tmp) / "request.json", Path(tmp) / "report.json"
        data.write_text(json.dumps(request(deadline_ms)))
        cmd = ghz_command(find_ghz(), PROTO, target, data, round(rate), seconds, out)
        cmd[cmd.index("-c") + 1] = str(workers)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, timeout=seconds + 120)
        report = json.loads(out.read_text())
    result = read_ghz(report)
    result["total_s"] = report.get("total", 0) / 1e9
    result["command"] = " ".join(cmd)
    return result


def capacity(target: str, args: argparse.Namespace) -> tuple[float, list[dict[str, Any]]]:
    """The highest rate whose step passes (every call OK, p99 < SLO, 90 % of the rate)."""
    steps: list[dict[str, Any]] = []

    def step(rate: float) -> bool:
        r = ghz(target, rate, args.step_seconds, None, args.workers)
        ok = (
            r["requests"] > 0
            and r["errors"]["status"] == 0
            and r["latency_ms"]["p99"] < args.slo_ms
            and r["rps"] >= ACHIEVED_SHARE * rate
        )
        steps.append({"rate": rate, "passed": ok, "rps": r["rps"], **r["latency_ms"]})
        print(f"  capacity step {rate:.0f}/s: {'pass' if ok else 'fail'} {steps[-1]}")
        return ok

    return highest_passing(step, args.start_rate), steps


async def probe(
    target: str, rate: float, seconds: float, deadline_ms: float
) -> list[tuple[str, float]]:
    """(code name, latency ms from the intended send) of an open-loop Poisson stream."""
    message = service_pb2.ModelInferRequest(model_name="affine")
    message.inputs.add(name="x", datatype="FP32", shape=[1, 4])
    message.raw_input_contents.append(np.arange(1, 5, dtype="<f4").tobytes())
    message.parameters["timeout"].int64_param = int(deadline_ms * 1000)
    payload = message.SerializeToString()
    records: list[tuple[str, float]] = []
    async with grpc.aio.insecure_channel(target) as channel:
        call = channel.unary_unary(METHOD)

        async def one(intended: float) -> None:
            try:
                await call(payload, timeout=10)
                code = "OK"
            except grpc.aio.AioRpcError as e:
                code = e.code().name
            records.append((code, (time.monotonic() - intended) * 1e3))

        await poisson(rate, seconds, one)
    return records


def overload(server: Server, target: str, rate: float, args: argparse.Namespace) -> dict[str, Any]:
    seconds = args.minutes * 60
    stop = threading.Event()
    memory: list[list[float]] = []
    sampler = threading.Thread(
        target=lambda: memory.extend(sample_memory(server, args.sample_seconds, stop))
    )
    probed: list[tuple[str, float]] = []
    prober = threading.Thread(
        target=lambda: probed.extend(
            asyncio.run(probe(target, args.probe_rate, seconds, args.deadline_ms))
        )
    )
    sampler.start()
    prober.start()
    result = ghz(target, rate, seconds, args.deadline_ms, args.overload_workers)
    prober.join()
    stop.set()
    sampler.join()
    codes = {str(k): int(v) for k, v in result["status"].items()}
    by_code: dict[str, list[float]] = {}
    for code, ms in probed:
        by_code.setdefault(code, []).append(ms)
    ok_ms = by_code.get("OK", [])
    within = sum(ms < args.slo_ms for ms in ok_ms) / len(ok_ms) if ok_ms else 0.0
    duration = result["total_s"] or seconds
    return {
        "command": result["command"],
        "offered_rate": rate,
        "seconds": seconds,
        "calls": result["requests"],
        "achieved_rps": result["rps"],
        "codes": codes,
        "goodput_rps": codes.get("OK", 0) / duration,
        "probe_oks_within_slo": round(within, 4),
        "latency_all_ms": result["latency_ms"],
        "probe": {
            "rate": args.probe_rate,
            "codes": dict(Counter(c for c, _ in probed)),
            "latency_ms_by_code": {c: percentiles(v) for c, v in sorted(by_code.items())},
        },
        "memory_mib": memory_summary(memory, args.sample_seconds),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=10.0, help="overload duration")
    p.add_argument("--factor", type=float, default=10.0, help="offered load / capacity")
    p.add_argument("--capacity", type=float, help="skip the search: this rate (calls/s)")
    p.add_argument("--start-rate", type=float, default=100.0)
    p.add_argument("--step-seconds", type=float, default=10.0)
    p.add_argument("--slo-ms", type=float, default=50.0, help="capacity: p99 below this")
    p.add_argument("--deadline-ms", type=float, default=20.0, help="overload: each call's")
    p.add_argument("--workers", type=int, default=64, help="ghz workers, capacity steps")
    p.add_argument("--overload-workers", type=int, default=256)
    p.add_argument("--probe-rate", type=float, default=20.0)
    p.add_argument("--sample-seconds", type=float, default=2.0)
    p.add_argument("--devices", default="sim:1")
    p.add_argument("--json", type=Path, help="write the result here")
    args = p.parse_args()

    knobs = ModelKnobs()
    with tempfile.TemporaryDirectory() as tmp:
        repo = write_repository(Path(tmp) / "repo", knobs)
        serve_args = [
            "--models", str(repo), "--devices", args.devices, "--port", "0",
            "--metrics-port", "off", "--grpc-port", "0",
        ]  # fmt: skip
        server = Server(serve_args, Path(tmp) / "serve.log")
        try:
            print(server.line)
            assert server.grpc_port, server.line
            target = f"127.0.0.1:{server.grpc_port}"
            if args.capacity is None:
                cap, steps = capacity(target, args)
            else:
                cap, steps = args.capacity, []
            print(f"capacity at p99 < {args.slo_ms:g} ms over gRPC: {cap:.0f} calls/s")
            run = overload(server, target, args.factor * cap, args)
            report: dict[str, Any] = {
                "server": " ".join(server.command),
                "client": f"ghz ({GRPC_CONNECTIONS} connections)",
                "model": vars(knobs),
                "slo_ms": args.slo_ms,
                "deadline_ms": args.deadline_ms,
                "capacity_rps": cap,
                "capacity_steps": steps,
                "overload": run,
                "goodput_over_capacity": run["goodput_rps"] / cap,
                "alive_at_end": server.alive(),
                "ready_at_end": ready(server.url),
            }
        finally:
            report_exit = server.stop()
    report["exit_status"] = report_exit
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    summary = {k: v for k, v in report.items() if k not in ("capacity_steps", "overload")}
    summary["overload"] = {k: v for k, v in run.items() if k != "memory_mib"}
    summary["memory_after_1min_mib"] = run["memory_mib"]["after_1min"]
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
