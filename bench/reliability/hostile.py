"""Slow and hostile clients against ``lanes serve``, with a well-behaved client measured
throughout.

Method: one ``lanes serve`` (the ``affine`` ONNX model of bench/reliability/server.py, run
natively on ``cpu``; REST and gRPC on free ports; the server's default limits). A
well-behaved client sends ``--rate`` inferences per second for the whole run, open loop
(a constant rate), each on a **new** connection (so a flood that blocks accepting shows), and
records status and latency from the intended send time. The attacks run one after another,
each bounded in count and time, with a quiet gap between them:

- ``slowloris``: ``--slow`` connections send a request line, then one header line a second,
  never ending the head; when and how the server cuts each is recorded.
- ``idle``: ``--idle`` connections opened and left silent (the server's open files and memory
  at the peak are sampled); when the server closes each. ``idle_grpc``: the same on the gRPC
  port.
- ``big_header``: ``--big`` requests each with one 1 MiB header: the status and the time to it.
- ``stalled_body``: ``--stalled`` requests announce a 1,000-byte body, send 10 bytes and stop:
  the status and the time to it.
- ``grpc_over_limit``: ``--grpc`` ``ModelInfer`` calls whose message is 1 MiB over the
  server's limit (``--max-body-mb``, default 64 MiB): the gRPC code and the time to it.

For each attack: what the attackers got (statuses, times to the cut), and the well-behaved
client's success rate and latency (p50/p99) over the attack's window, beside a quiet baseline;
the same for a well-behaved gRPC client (``--grpc-rate`` calls a second, each on a new channel).
Each attack also records the server's resident memory right after it and again after the
gap (once the server has given freed memory back). ``--only`` runs some attacks, ``--rounds``
repeats them (does a second flood reuse the memory of the first?), ``--header-timeout`` is the
server's option of that name (the idle and slowloris attacks last until it cuts them). The whole
run is wrapped in ``flock /tmp/lanes-bench.lock`` by whoever runs it:

    flock /tmp/lanes-bench.lock .venv/bin/python bench/reliability/hostile.py [--json F]
    flock /tmp/lanes-bench.lock .venv/bin/python bench/reliability/hostile.py \
        --only idle,idle_grpc --rounds 2 --header-timeout 4 --hold 15
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server import INFER, REQUEST, ModelKnobs, Server, percentiles, write_repository

Record = tuple[float, int, float]
"""A well-behaved request: intended send (s from the run's start), status (0: failed), ms."""


class Client:
    """The well-behaved client: ``rate`` requests a second on new connections, on a thread."""

    def __init__(self, url: str, rate: float) -> None:
        self.url, self.rate = url, rate
        self.records: list[Record] = []
        self.start = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)
        self._thread.start()

    async def _run(self) -> None:
        timeout = aiohttp.ClientTimeout(total=20)
        connector = aiohttp.TCPConnector(force_close=True, limit=0)
        headers = {"Content-Type": "application/json"}
        async with aiohttp.ClientSession(
            connector=connector, timeout=timeout, headers=headers
        ) as session:

            async def one(at: float) -> None:
                try:
                    async with session.post(self.url + INFER, data=REQUEST) as r:
                        await r.read()
                        status = r.status
                except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
                    status = 0
                ms = (time.monotonic() - self.start - at) * 1e3
                self.records.append((at, status, ms))

            tasks = []
            n = 0
            while not self._stop.is_set():
                at = n / self.rate
                await asyncio.sleep(max(0.0, self.start + at - time.monotonic()))
                tasks.append(asyncio.create_task(one(at)))
                n += 1
            await asyncio.gather(*tasks)

    def now(self) -> float:
        return time.monotonic() - self.start

    def window(self, start: float, end: float) -> dict[str, Any]:
        """Success rate and latency of the requests intended in ``[start, end)``."""
        rows = [r for r in self.records if start <= r[0] < end]
        ok = [ms for _, status, ms in rows if status == 200]
        return {
            "requests": len(rows),
            "success_rate": round(len(ok) / len(rows), 4) if rows else None,
            "statuses": dict(Counter(status for _, status, _ in rows)),
            "latency_ms": percentiles(ok),
        }

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


class GrpcClient(Client):
    """A well-behaved gRPC client: ``rate`` small ``ModelInfer`` calls a second, each on a new
    channel (so a new connection), one at a time on a thread."""

    def __init__(self, port: int, rate: float) -> None:
        self.port = port
        super().__init__("", rate)

    async def _run(self) -> None:
        await asyncio.to_thread(self._calls)

    def _calls(self) -> None:
        import grpc
        from tritonclient.grpc import service_pb2, service_pb2_grpc

        request = service_pb2.ModelInferRequest(model_name="affine")
        request.inputs.add(name="x", datatype="FP32", shape=[1, 4])
        request.raw_input_contents.append(bytes(16))
        n = 0
        while not self._stop.is_set():
            at = n / self.rate
            self._stop.wait(max(0.0, self.start + at - time.monotonic()))
            with grpc.insecure_channel(f"127.0.0.1:{self.port}") as channel:
                stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
                try:
                    stub.ModelInfer(request, timeout=5)
                    status = 200
                except grpc.RpcError:
                    status = 0
            self.records.append((at, status, (time.monotonic() - self.start - at) * 1e3))
            n += 1


async def status_line(reader: asyncio.StreamReader, within: float) -> tuple[str, float]:
    """The first line the server sends (``""`` when it closes without one, ``"none"`` when
    nothing came within ``within`` s), and the seconds it took."""
    t0 = time.monotonic()
    try:
        line = await asyncio.wait_for(reader.readline(), within)
        text = line.decode(errors="replace").strip() or ""
    except asyncio.TimeoutError:
        text = "none"
    except OSError:
        text = ""
    return text, time.monotonic() - t0


def name(text: str) -> str:
    """An HTTP status; ``closed``: cut with no answer; ``none``: still open at the end;
    ``bytes, then closed``: something else (HTTP/2's SETTINGS frame), then cut."""
    if text.startswith("HTTP/"):
        return text.split()[1]
    if text in ("", "none"):
        return text or "closed"
    return "bytes, then closed"


def outcome(results: list[tuple[str, float]]) -> dict[str, Any]:
    """Answers by :func:`name` and the times to them."""
    names = [name(text) for text, _ in results]
    cut = [s * 1e3 for text, s in results if text != "none"]
    return {"answers": dict(Counter(names)), "time_to_answer_or_cut_ms": percentiles(cut)}


async def open_many(host: str, port: int, n: int) -> list[tuple[asyncio.StreamReader, Any]]:
    """``n`` connections, 500 at a time; those that failed are left out."""
    streams: list[tuple[asyncio.StreamReader, Any]] = []
    for i in range(0, n, 500):
        batch = await asyncio.gather(
            *(asyncio.open_connection(host, port) for _ in range(min(500, n - i))),
            return_exceptions=True,
        )
        streams.extend(s for s in batch if not isinstance(s, BaseException))
    return streams


async def slowloris(host: str, port: int, n: int, hold_s: float) -> dict[str, Any]:
    streams = await open_many(host, port, n)

    async def one(reader: asyncio.StreamReader, writer: Any) -> tuple[str, float]:
        t0 = time.monotonic()
        writer.write(f"POST {INFER} HTTP/1.1\r\nHost: x\r\n".encode())
        i = 0
        while time.monotonic() - t0 < hold_s:
            try:
                writer.write(f"X-Slow-{i}: 1\r\n".encode())
                await writer.drain()
            except OSError:
                return "", time.monotonic() - t0
            text, _ = await status_line(reader, 1.0)
            if text != "none":
                return text, time.monotonic() - t0
            i += 1
        return "none", hold_s

    results = await asyncio.gather(*(one(r, w) for r, w in streams))
    for _, w in streams:
        w.close()
    return {"connections": len(streams), **outcome(list(results))}


async def idle(server: Server, host: str, port: int, n: int, hold_s: float) -> dict[str, Any]:
    t0 = time.monotonic()
    streams = await open_many(host, port, n)
    opened_s = time.monotonic() - t0
    peak = {"open_files": server.open_files(), "rss_mib": round(server.rss_bytes() / 2**20, 1)}
    results = await asyncio.gather(*(status_line(r, hold_s) for r, _ in streams))
    for _, w in streams:
        w.close()
    return {
        "connections": len(streams),
        "failed_to_open": n - len(streams),
        "open_all_s": round(opened_s, 2),
        "server_at_peak": peak,
        **outcome(list(results)),
    }


async def big_header(host: str, port: int, n: int, size: int) -> dict[str, Any]:
    head = f"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Big: {'a' * size}\r\n\r\n".encode()
    gate = asyncio.Semaphore(10)

    async def one() -> tuple[str, float]:
        async with gate:
            t0 = time.monotonic()
            reader, writer = await asyncio.open_connection(host, port)
            try:
                writer.write(head)
                await writer.drain()
            except OSError:
                pass  # the server may answer and close before the end
            text, _ = await status_line(reader, 30.0)
            writer.close()
            return text, time.monotonic() - t0

    return {
        "requests": n,
        "header_bytes": size,
        **outcome(await asyncio.gather(*(one() for _ in range(n)))),
    }


async def stalled_body(host: str, port: int, n: int, hold_s: float) -> dict[str, Any]:
    streams = await open_many(host, port, n)
    head = (
        f"POST {INFER} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: 1000\r\n\r\n" + '{"inputs":'
    ).encode()

    async def one(reader: asyncio.StreamReader, writer: Any) -> tuple[str, float]:
        t0 = time.monotonic()
        writer.write(head)
        await writer.drain()
        text, _ = await status_line(reader, hold_s)
        return text, time.monotonic() - t0

    results = await asyncio.gather(*(one(r, w) for r, w in streams))
    for _, w in streams:
        w.close()
    return {"connections": len(streams), **outcome(list(results))}


def grpc_over_limit(port: int, n: int, limit_mb: int) -> dict[str, Any]:
    import grpc
    from tritonclient.grpc import service_pb2

    size = (limit_mb + 1) * 2**20
    request = service_pb2.ModelInferRequest(model_name="affine")
    tensor = request.inputs.add(name="x", datatype="FP32", shape=[size // 16, 4])
    assert tensor
    request.raw_input_contents.append(b"\0" * size)
    message = request.SerializeToString()  # once: the calls send these bytes as they are
    options = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
    codes: list[tuple[str, float]] = []
    with grpc.insecure_channel(f"127.0.0.1:{port}", options=options) as channel:
        infer = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer")
        for _ in range(n):
            t0 = time.monotonic()
            try:
                infer(message, timeout=30)
                code, detail = "OK", ""
            except grpc.RpcError as e:
                code, detail = e.code().name, e.details() or ""
            codes.append((f"{code}: {detail}", time.monotonic() - t0))
    return {
        "calls": n,
        "message_bytes": len(message),
        "answers": dict(Counter(c for c, _ in codes)),
        "time_to_answer_ms": percentiles([s * 1e3 for _, s in codes]),
    }


async def run(
    args: argparse.Namespace, server: Server, client: Client, grpc_client: Client
) -> dict[str, Any]:
    host, port = server.url.split("//", 1)[1].rsplit(":", 1)
    port_n = int(port)
    report: dict[str, Any] = {}

    async def phase(name: str, attack: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        t0 = client.now()
        result = await attack()
        t1 = client.now()
        result["seconds"] = round(t1 - t0, 1)
        result["well_behaved"] = client.window(t0, t1)
        result["well_behaved_grpc"] = grpc_client.window(t0, t1)
        result["server_alive"] = server.alive()
        result["server_rss_mib_after"] = round(server.rss_bytes() / 2**20, 1)
        await asyncio.sleep(args.gap)
        result["server_rss_mib_after_gap"] = round(server.rss_bytes() / 2**20, 1)
        report[name] = result
        print(name, json.dumps(result))

    async def quiet() -> dict[str, Any]:
        await asyncio.sleep(args.baseline)
        return {}

    async def grpc_attack() -> dict[str, Any]:
        assert server.grpc_port
        return await asyncio.to_thread(
            grpc_over_limit, server.grpc_port, args.grpc, args.max_body_mb
        )

    assert server.grpc_port
    grpc_port = server.grpc_port
    attacks: dict[str, Callable[[], Awaitable[dict[str, Any]]]] = {
        "slowloris": lambda: slowloris(host, port_n, args.slow, args.hold),
        "idle": lambda: idle(server, host, port_n, args.idle, args.hold),
        "idle_grpc": lambda: idle(server, host, grpc_port, args.idle, args.hold),
        "big_header": lambda: big_header(host, port_n, args.big, 2**20),
        "stalled_body": lambda: stalled_body(host, port_n, args.stalled, args.body_hold),
        "grpc_over_limit": grpc_attack,
    }
    only = args.only.split(",") if args.only else list(attacks)
    unknown = set(only) - set(attacks)
    if unknown:
        raise SystemExit(f"--only: unknown {sorted(unknown)}; allowed: {', '.join(attacks)}")
    await phase("baseline", quiet)
    for round_ in range(args.rounds):
        for name in only:
            await phase(name if round_ == 0 else f"{name}_{round_ + 1}", attacks[name])
    await phase("baseline_after", quiet)
    return report


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rate", type=float, default=50.0, help="well-behaved requests/s")
    p.add_argument("--grpc-rate", type=float, default=5.0, help="well-behaved gRPC calls/s")
    p.add_argument("--slow", type=int, default=500, help="slowloris connections")
    p.add_argument("--idle", type=int, default=10_000, help="idle connections")
    p.add_argument("--big", type=int, default=1000, help="1 MiB-header requests")
    p.add_argument("--stalled", type=int, default=500, help="never-finished bodies")
    p.add_argument("--grpc", type=int, default=10, help="gRPC calls over the limit")
    p.add_argument("--hold", type=float, default=45.0, help="s a slowloris/idle attack lasts")
    p.add_argument("--body-hold", type=float, default=75.0, help="s a stalled body lasts")
    p.add_argument("--baseline", type=float, default=10.0, help="s of quiet before and after")
    p.add_argument("--gap", type=float, default=3.0, help="s between attacks")
    p.add_argument("--max-body-mb", type=int, default=64)
    p.add_argument("--only", help="comma-separated attacks to run (default: all, in order)")
    p.add_argument("--rounds", type=int, default=1, help="times the attacks run")
    p.add_argument("--header-timeout", type=float, help="the server's --header-timeout (s)")
    p.add_argument("--json", type=Path, help="write the result here")
    args = p.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        repo = write_repository(Path(tmp) / "repo", ModelKnobs(max_enqueued_batches=64))
        serve_args = [
            "--models", str(repo), "--devices", "cpu", "--port", "0", "--grpc-port", "0",
            "--metrics-port", "off", "--max-body-mb", str(args.max_body_mb),
        ]  # fmt: skip
        if args.header_timeout is not None:
            serve_args += ["--header-timeout", str(args.header_timeout)]
        server = Server(serve_args, Path(tmp) / "serve.log")
        print(server.line)
        nofile = server.nofile_limit()
        assert server.grpc_port, server.line
        client = Client(server.url, args.rate)
        grpc_client = GrpcClient(server.grpc_port, args.grpc_rate)
        try:
            report = asyncio.run(run(args, server, client, grpc_client))
        finally:
            client.stop()
            grpc_client.stop()
            report_exit = server.stop()
    report = {
        "server": " ".join(server.command),
        "server_nofile_limit_soft_hard": nofile,
        "well_behaved_rate": args.rate,
        **report,
        "exit_status": report_exit,
    }
    text = json.dumps(report, indent=1)
    if args.json:
        args.json.write_text(text)


if __name__ == "__main__":
    main()
