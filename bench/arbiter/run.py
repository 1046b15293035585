"""Benchmark of ``lanes arbiter``: acquire → grant → release cycles per second on one core, and
grant latency when a device is free; figures for docs/results/arbiter.md.

Each repeat starts a fresh daemon pinned to one core (``taskset -c DAEMON_CPU``) with 64 sim
devices at capacity 1, so with 64 connections every ACQUIRE finds a free device and nothing
waits in a queue. The load engine (``lanes bench frame+unix:``, pinned to the other core, one
sender thread) opens 64 connections, sends a HELLO on each (``--frame-hello``), and then times
whole cycles: an ACQUIRE frame, its GRANT, a RELEASE frame, its RELEASED (``--frame-seq``; the
grant id is the ACQUIRE's id, so one fixed pair of frames serves every cycle).

- ``closed``: closed loop at 64 connections for ``--seconds``: the most cycles per second;
- ``open``: open loop at ``--rate`` cycles/s (Poisson) for ``--seconds``: the client's cycle
  latency from each intended send time, and the daemon's own grant latency, read from its
  Prometheus histogram ``lanes_arbiter_grant_wait_seconds`` (ACQUIRE receipt → GRANT) before
  and after the run; its p99 is interpolated within buckets as Prometheus'
  ``histogram_quantile`` does, beside the share of grants within 50 µs (a bucket bound).

Closed and open runs alternate within each repeat (A B A B ...); the summary gives medians with
the minimum and maximum over repeats.

    .venv/bin/python bench/arbiter/run.py [--repeats 3] [--seconds 10] [--rate 10000]
        [--connections 64] [--out bench/arbiter/out]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
LANES = [sys.executable, "-m", "lanes"]
MODEL = "bench"
HISTOGRAM = "lanes_arbiter_grant_wait_seconds"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def frames(folder: Path) -> tuple[Path, Path]:
    """hello.bin (a HELLO body) and cycle.bin (ACQUIRE then RELEASE, whole frames)."""
    from lanes.arbiter import protocol as p

    hello = folder / "hello.bin"
    hello.write_bytes(p.hello(os.getpid(), "bench")[4:])  # the engine adds the length prefix
    cycle = folder / "cycle.bin"
    cycle.write_bytes(p.acquire(1, MODEL, 1, cost_ns=1000) + p.release(1, run_ns=1000))
    return hello, cycle


class Daemon:
    """A ``lanes arbiter`` pinned to one core, with its metrics on a loopback port."""

    def __init__(self, sock: Path, cpu: int, devices: int) -> None:
        self.sock = sock
        self.port = free_port()
        cmd = [
            "taskset", "-c", str(cpu), *LANES, "arbiter", "--socket", str(sock),
            "--devices", f"sim:{devices}", "--capacity", "1", "--policy", "sjf",
            "--metrics-port", str(self.port), "--metrics-host", "127.0.0.1",
        ]  # fmt: skip
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 15
        while True:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise SystemExit(f"lanes arbiter exited {self.proc.returncode}: {err}")
            try:
                self.scrape()
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(str(sock))
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("lanes arbiter did not come up within 15 s") from None
                time.sleep(0.05)

    def scrape(self) -> str:
        url = f"http://127.0.0.1:{self.port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as r:
            return str(r.read().decode())

    def cpu_s(self) -> float:
        """The daemon's CPU seconds so far (user + system, every thread)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def buckets(text: str) -> list[tuple[float, float]]:
    """Cumulative (le, count) of the grant-wait histogram for MODEL, +Inf last."""
    out = []
    for line in text.splitlines():
        if line.startswith(f"{HISTOGRAM}_bucket{{") and f'model="{MODEL}"' in line:
            labels, value = line.rsplit(" ", 1)
            le = labels.split('le="', 1)[1].split('"', 1)[0]
            out.append((float(le), float(value)))
    return sorted(out)


def quantile(q: float, cumulative: list[tuple[float, float]]) -> float | None:
    """Prometheus' histogram_quantile: linear within the bucket that holds rank q * total."""
    if not cumulative or cumulative[-1][1] <= 0:
        return None
    rank = q * cumulative[-1][1]
    lower, below = 0.0, 0.0
    for le, count in cumulative:
        if count >= rank:
            if le == float("inf"):
                return lower
            return lower + (le - lower) * (rank - below) / max(count - below, 1e-12)
        lower, below = le, count
    return lower


def diff(after: list[tuple[float, float]], before: list[tuple[float, float]]) -> list[Any]:
    old = dict(before)
    return [(le, n - old.get(le, 0.0)) for le, n in after]


def bench(url: str, cpu: int, args: argparse.Namespace, hello: Path, cycle: Path,
          out: Path, rate: float | None) -> dict[str, Any]:  # fmt: skip
    cmd = [
        "taskset", "-c", str(cpu), *LANES, "bench", url, "--frame-hello", str(hello),
        "--frame-seq", "--body-file", str(cycle), "-c", str(args.connections), "-t", "1",
        "-d", f"{args.seconds}s", "--json", str(out), "-q",
    ]  # fmt: skip
    if rate is not None:
        cmd += ["-R", str(rate)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = dict(json.loads(out.read_text()))
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    result["client_cpu_s"] = cpu
    return result


def one_repeat(i: int, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    hello, cycle = frames(tmp)
    sock = tmp / f"arb{i}.sock"
    daemon = Daemon(sock, args.daemon_cpu, args.connections)
    url = f"frame+unix:{sock}"
    try:
        row: dict[str, Any] = {"repeat": i}
        cpu0, start = daemon.cpu_s(), buckets(daemon.scrape())
        closed = bench(url, args.load_cpu, args, hello, cycle, args.out / f"closed-{i}.json", None)
        daemon_cpu = daemon.cpu_s() - cpu0
        granted = diff(buckets(daemon.scrape()), start)
        row["closed"] = {
            "cycles_per_s": closed["rps"],
            "daemon_cpu_s": daemon_cpu,
            "client_cpu_s": closed["client_cpu_s"],
            "wall_s": closed["duration_s"],
            # What one whole core of the daemon's would carry at the CPU cost measured.
            "cycles_per_daemon_cpu_s": closed["requests"] / max(daemon_cpu, 1e-9),
            "cycles": closed["requests"],
            # Every cycle must have been a GRANT (a REJECT is a reply too, for the engine).
            "grants": granted[-1][1] if granted else 0.0,
            "errors": closed["errors"],
            "service_p99_ms": closed["service_time_ms"]["p99"],
        }
        before = buckets(daemon.scrape())
        opened = bench(url, args.load_cpu, args, hello, cycle, args.out / f"open-{i}.json",
                       args.rate)  # fmt: skip
        grants = diff(buckets(daemon.scrape()), before)
        total = grants[-1][1] if grants else 0.0
        within = next((n for le, n in grants if abs(le - 50e-6) < 1e-9), None)
        row["open"] = {
            "rate": args.rate,
            "cycles": opened["requests"],
            "errors": opened["errors"],
            "late_sends_fraction": opened["late_sends_fraction"],
            "latency_ms": opened["latency_ms"],
            "grant_p99_us": None if not total else 1e6 * (quantile(0.99, grants) or 0.0),
            "grant_p50_us": None if not total else 1e6 * (quantile(0.50, grants) or 0.0),
            "grants": total,
            "grants_within_50us": None if within is None or not total else within / total,
        }
    finally:
        daemon.stop()
    return row


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def stat(values: list[float]) -> dict[str, float]:
        return {"median": statistics.median(values), "min": min(values), "max": max(values)}

    return {
        "closed_cycles_per_s": stat([r["closed"]["cycles_per_s"] for r in rows]),
        "closed_cycles_per_daemon_cpu_s": stat(
            [r["closed"]["cycles_per_daemon_cpu_s"] for r in rows]
        ),
        "open_grant_p99_us": stat([r["open"]["grant_p99_us"] or 0.0 for r in rows]),
        "open_grants_within_50us": stat([r["open"]["grants_within_50us"] or 0.0 for r in rows]),
        "open_cycle_p99_ms": stat([r["open"]["latency_ms"]["p99"] for r in rows]),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=10000.0, help="open-loop cycles/s")
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--daemon-cpu", type=int, default=0)
    ap.add_argument("--load-cpu", type=int, default=1)
    ap.add_argument("--out", type=Path, default=HERE / "out")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="lanes-arb-bench-") as tmp:
        for i in range(args.repeats):
            row = one_repeat(i, args, Path(tmp))
            print(json.dumps(row), flush=True)
            rows.append(row)
    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.node()} {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, {platform.platform()}",
        "command": " ".join(sys.argv),
        "repeats": rows,
        "summary": summary(rows),
    }
    (args.out / "arbiter.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["summary"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
