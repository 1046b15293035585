"""Reusable pieces for the load benchmarks in bench/load/ (standard library only).

- ensure_tools: install nginx and wrk from the Debian archive when missing.
- Nginx: a throwaway nginx (one worker) serving /index.html and /empty on loopback.
- run_wrk: run wrk and parse what it prints.
- StallServer: an HTTP/1.1 keep-alive server that freezes its event loop on a fixed
  period, to show coordinated omission.
- read_send_log, ks_exponential, dispersion_index: analysis of the send log that
  ``lanes bench --send-log FILE`` writes.

Run ``python kit.py stall-server --help`` for the server's own entry point.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import itertools
import math
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

HERE = Path(__file__).resolve().parent
NGINX_TEMPLATE = HERE / "nginx.conf"

# apt packages that provide each tool, in order of preference.
_APT_PACKAGES: dict[str, list[str]] = {
    "nginx": ["nginx-light", "nginx"],
    "wrk": ["wrk"],
}


# --------------------------------------------------------------------------- tools


class ToolError(RuntimeError):
    """A tool the benchmarks need is missing and could not be installed."""


def _apt_install(packages: Sequence[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    return subprocess.run(
        ["apt-get", "install", "-y", "--no-install-recommends", *packages],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def _apt_update() -> None:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    done = subprocess.run(
        ["apt-get", "update"], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise ToolError(f"apt-get update failed:\n{done.stdout}\n{done.stderr}")


@contextlib.contextmanager
def _no_service_start() -> Iterator[None]:
    """Keep dpkg from starting the system nginx service during the install."""
    policy = Path("/usr/sbin/policy-rc.d")
    if policy.exists():
        yield
        return
    policy.write_text("#!/bin/sh\nexit 101\n")
    policy.chmod(0o755)
    try:
        yield
    finally:
        policy.unlink(missing_ok=True)


def _install_missing(missing: Sequence[str]) -> list[str]:
    errors = []
    for name in missing:
        if shutil.which(name) is not None:
            continue
        for package in _APT_PACKAGES[name]:
            done = _apt_install([package])
            if done.returncode == 0 and shutil.which(name) is not None:
                break
            errors.append(f"apt-get install {package}: {done.stderr.strip()}")
    return errors


def ensure_tools(names: Iterable[str] = ("nginx", "wrk")) -> dict[str, str]:
    """Make sure each named tool is on PATH, installing it with apt-get if not.

    Returns {name: absolute path}. apt-get update runs only when a first install fails
    (for nginx, after both nginx-light and nginx were tried).
    """
    names = list(names)
    unknown = [n for n in names if n not in _APT_PACKAGES]
    if unknown:
        raise ValueError(f"ensure_tools knows only {sorted(_APT_PACKAGES)}, not {unknown}")
    missing = [n for n in names if shutil.which(n) is None]
    if missing:
        if shutil.which("apt-get") is None:
            raise ToolError(f"{missing} not found and apt-get is not available")
        if os.geteuid() != 0:
            raise ToolError(
                f"{missing} not found; installing them needs root: run as root, or "
                f"'apt-get install --no-install-recommends nginx-light wrk' yourself"
            )
        with _no_service_start():
            errors = _install_missing(missing)
            if any(shutil.which(n) is None for n in missing):
                _apt_update()
                errors = _install_missing(missing)
        still = [n for n in missing if shutil.which(n) is None]
        if still:
            raise ToolError(f"could not install {still}:\n" + "\n".join(errors))
    return {n: str(shutil.which(n)) for n in names}


def tool_versions() -> dict[str, str]:
    """nginx and wrk versions as they report them ('' when absent)."""
    out: dict[str, str] = {}
    if shutil.which("nginx"):
        done = subprocess.run(["nginx", "-v"], capture_output=True, text=True, check=False)
        out["nginx"] = (done.stderr or done.stdout).strip()
    else:
        out["nginx"] = ""
    if shutil.which("wrk"):
        # wrk prints its version in the usage text and exits 1.
        done = subprocess.run(["wrk", "-v"], capture_output=True, text=True, check=False)
        text = (done.stdout + done.stderr).strip()
        out["wrk"] = text.splitlines()[0] if text else ""
    else:
        out["wrk"] = ""
    return out


def pin(cpu: int | str | None) -> list[str]:
    """The taskset prefix that pins a command to a CPU list, or [] when cpu is None."""
    if cpu is None:
        return []
    if shutil.which("taskset") is None:
        raise ToolError("taskset not found (package util-linux)")
    return ["taskset", "-c", str(cpu)]


def free_port() -> int:
    """A loopback TCP port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, timeout_s: float = 10.0, host: str = "127.0.0.1") -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing accepts on {host}:{port} after {timeout_s}s") from None
            time.sleep(0.02)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0); treat it as gone.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _children(pid: int) -> list[int]:
    kids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid:
            kids.append(int(entry.name))
    return kids


# --------------------------------------------------------------------------- nginx

INDEX_HTML = (
    '<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n'
    "<title>lanes load benchmark</title>\n</head>\n<body>\n"
    "<h1>lanes load benchmark</h1>\n"
    "<p>This page is served by a throwaway nginx that bench/load/kit.py starts on the "
    "loopback interface. Its only purpose is to be a small, fixed, cacheable response, so "
    "that what the benchmark measures is the client and the HTTP exchange rather than "
    "the server's work.</p>\n"
    "<p>" + "lorem ipsum dolor sit amet " * 7 + "</p>\n"
    "</body>\n</html>\n"
)


class Nginx:
    """A throwaway nginx on 127.0.0.1, one worker, optionally pinned to a CPU.

    >>> with Nginx(cpu=1) as web:
    ...     run_wrk(web.url + "/index.html", 50, 1, 3, cpu=0)
    """

    def __init__(
        self,
        port: int | None = None,
        cpu: int | str | None = None,
        template: Path = NGINX_TEMPLATE,
        nginx: str = "nginx",
    ) -> None:
        self.port = port if port is not None else free_port()
        self.cpu = cpu
        self.template = Path(template)
        self.nginx = nginx
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self.prefix: Path | None = None
        self.pid: int | None = None
        self.command: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Nginx:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def server_pids(self) -> list[int]:
        """The master and worker pids (for CpuAccount)."""
        return [] if self.pid is None else [self.pid, *_children(self.pid)]

    def _error_log(self) -> str:
        if self.prefix is None:
            return ""
        try:
            return (self.prefix / "error.log").read_text()[-4000:]
        except OSError:
            return ""

    def start(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="lanes-nginx-")
        prefix = Path(self._tmp.name)
        self.prefix = prefix
        root = prefix / "html"
        root.mkdir()
        (root / "index.html").write_text(INDEX_HTML)
        # The worker runs as 'nobody' when the master is root: let it read the page.
        for path in (prefix, root):
            path.chmod(0o755)
        (root / "index.html").chmod(0o644)
        conf = self.template.read_text().replace("@PORT@", str(self.port))
        conf = conf.replace("@ROOT@", str(root))
        conf_path = prefix / "nginx.conf"
        conf_path.write_text(conf)
        self.command = [
            *pin(self.cpu),
            self.nginx,
            "-c",
            str(conf_path),
            "-p",
            f"{prefix}/",
            "-e",
            str(prefix / "error.log"),
            "-g",
            f"pid {prefix}/nginx.pid;",
        ]
        done = subprocess.run(self.command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            self._cleanup()
            raise RuntimeError(
                f"nginx failed to start ({done.returncode}): {done.stderr.strip()}\n"
                f"{self._error_log()}"
            )
        try:
            wait_for_port(self.port)
            deadline = time.monotonic() + 5
            pid_file = prefix / "nginx.pid"
            while not pid_file.exists() or not pid_file.read_text().strip():
                if time.monotonic() > deadline:
                    raise TimeoutError("nginx wrote no pid file")
                time.sleep(0.02)
            self.pid = int(pid_file.read_text().strip())
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        pid = self.pid
        if pid is None and self.prefix is not None:
            with contextlib.suppress(OSError, ValueError):
                pid = int((self.prefix / "nginx.pid").read_text().strip())
        if pid is not None:
            workers = _children(pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGQUIT)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and (
                _pid_alive(pid) or any(_pid_alive(w) for w in workers)
            ):
                time.sleep(0.05)
            for p in (pid, *workers):
                if _pid_alive(p):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(p, signal.SIGKILL)
        self.pid = None
        self._cleanup()

    def _cleanup(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


# --------------------------------------------------------------------------- wrk

_TIME_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}
_METRIC_UNITS = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9}


def _ms(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", text)
    if not m:
        return math.nan
    return float(m.group(1)) * _TIME_UNITS[m.group(2)]


def _metric(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)([kMG]?)", text)
    if not m:
        return math.nan
    return float(m.group(1)) * _METRIC_UNITS[m.group(2)]


def parse_wrk(output: str) -> dict[str, Any]:
    """Parse what wrk 4.x prints (with or without --latency) into a dict.

    Times are in milliseconds. Missing lines leave their keys out (errors default to 0).
    """
    out: dict[str, Any] = {
        "errors": {"connect": 0, "read": 0, "write": 0, "timeout": 0},
        "non_2xx": 0,
    }
    m = re.search(r"^\s*Latency\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)", output, re.M)
    if m:
        out["latency_avg_ms"] = _ms(m.group(1))
        out["latency_stdev_ms"] = _ms(m.group(2))
        out["latency_max_ms"] = _ms(m.group(3))
    m = re.search(r"^\s*Req/Sec\s+(\S+)\s+(\S+)\s+(\S+)", output, re.M)
    if m:
        out["thread_rps_avg"] = _metric(m.group(1))
        out["thread_rps_max"] = _metric(m.group(3))
    for pct, value in re.findall(r"^\s+(\d+(?:\.\d+)?)%\s+(\S+)\s*$", output, re.M):
        key = "latency_p" + pct.replace(".", "") + "_ms"
        out[key] = _ms(value)
    m = re.search(r"^\s*(\d+) requests in (\S+), (\S+) read", output, re.M)
    if m:
        out["requests"] = int(m.group(1))
        out["duration_s"] = _ms(m.group(2)) / 1e3
        out["read"] = m.group(3)
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    if m:
        out["errors"] = dict(
            zip(("connect", "read", "write", "timeout"), map(int, m.groups()), strict=True)
        )
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    if m:
        out["non_2xx"] = int(m.group(1))
    m = re.search(r"^Requests/sec:\s+([\d.]+)", output, re.M)
    if m:
        out["rps"] = float(m.group(1))
    m = re.search(r"^Transfer/sec:\s+(\S+)", output, re.M)
    if m:
        out["transfer_per_s"] = m.group(1)
    return out


def run_wrk(
    url: str,
    connections: int,
    threads: int,
    duration_s: float,
    cpu: int | str | None = None,
    *,
    timeout_s: float | None = None,
    extra: Sequence[str] = (),
) -> dict[str, Any]:
    """Run wrk (closed loop) and return its parsed summary plus the command and raw output."""
    cmd = [
        *pin(cpu),
        "wrk",
        "-c",
        str(connections),
        "-t",
        str(threads),
        "-d",
        f"{duration_s:g}s",
        "--latency",
        *(["--timeout", f"{timeout_s:g}s"] if timeout_s is not None else []),
        *extra,
        url,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=duration_s + 60)
    if done.returncode != 0 or "Requests/sec" not in done.stdout:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stdout}\n{done.stderr}")
    result = parse_wrk(done.stdout)
    result["cmd"] = cmd
    result["raw"] = done.stdout
    return result


# --------------------------------------------------------------------------- stall server

_RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n"
_RESPONSE_CLOSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n"
    b"Connection: close\r\n\r\nok\n"
)
_BAD_REQUEST = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
_MAX_HEAD = 64 * 1024


class _StallProtocol(asyncio.Protocol):
    """Minimal HTTP/1.1: read to CRLFCRLF, skip a Content-Length body, answer 200."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        transport = self.transport
        assert transport is not None
        self.buf += data
        out = []
        close = False
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buf) > _MAX_HEAD:
                    out.append(_BAD_REQUEST)
                    close = True
                break
            head = bytes(self.buf[:end]).decode("latin-1")
            lines = head.split("\r\n")
            request = lines[0].split()
            if len(request) != 3 or not request[2].startswith("HTTP/1."):
                out.append(_BAD_REQUEST)
                close = True
                break
            length = 0
            keep_alive = request[2] == "HTTP/1.1"
            for line in lines[1:]:
                name, _, value = line.partition(":")
                name = name.strip().lower()
                if name == "content-length":
                    try:
                        length = int(value.strip())
                    except ValueError:
                        length = -1
                elif name == "connection":
                    token = value.strip().lower()
                    if token == "close":
                        keep_alive = False
                    elif token == "keep-alive":
                        keep_alive = True
                elif name == "transfer-encoding":
                    length = -1  # chunked bodies are not supported here
            if length < 0:
                out.append(_BAD_REQUEST)
                close = True
                break
            total = end + 4 + length
            if len(self.buf) < total:
                break  # wait for the rest of the body
            del self.buf[:total]
            if keep_alive:
                out.append(_RESPONSE)
            else:
                out.append(_RESPONSE_CLOSE)
                close = True
                break
        if out:
            transport.write(b"".join(out))
        if close:
            transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None


async def _serve_stalling(
    host: str,
    port: int,
    stall_ms: float,
    period_s: float,
    log_path: str | None,
    ready: Any,
) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(_StallProtocol, host, port, backlog=4096, reuse_address=True)
    bound = server.sockets[0].getsockname()[1]
    log = open(log_path, "w", buffering=1) if log_path else None  # noqa: SIM115
    start_mono = loop.time()
    start_wall = time.time()
    if log is not None:
        log.write(
            f"# stall server port={bound} stall_ms={stall_ms:g} period_s={period_s:g} "
            f"start_epoch_s={start_wall:.6f}\n"
            "# index start_epoch_s start_offset_s stalled_s\n"
        )
    stop = asyncio.Event()

    def stall(index: int) -> None:
        t0_wall = time.time()
        t0 = time.monotonic()
        time.sleep(stall_ms / 1e3)  # freezes the whole event loop on purpose
        stalled = time.monotonic() - t0
        if log is not None:
            log.write(f"{index} {t0_wall:.6f} {t0_wall - start_wall:.6f} {stalled:.6f}\n")
        loop.call_at(start_mono + (index + 1) * period_s, stall, index + 1)

    if stall_ms > 0 and period_s > 0:
        loop.call_at(start_mono + period_s, stall, 1)
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    ready(bound)
    try:
        await stop.wait()
    finally:
        server.close()
        if log is not None:
            log.close()


def serve_stalling(
    host: str = "127.0.0.1",
    port: int = 0,
    stall_ms: float = 500.0,
    period_s: float = 5.0,
    log_path: str | None = None,
) -> None:
    """Run the stalling server in this process until SIGTERM/SIGINT; prints 'PORT n'."""

    def ready(bound: int) -> None:
        print(f"PORT {bound}", flush=True)

    asyncio.run(_serve_stalling(host, port, stall_ms, period_s, log_path, ready))


class StallServer:
    """A real HTTP/1.1 keep-alive server that freezes for stall_ms every period_s.

    Runs as a separate process (this file with the 'stall-server' argument), single
    threaded asyncio; stalls are measured from the server's start. With log_path, each
    stall appends 'index start_epoch_s start_offset_s stalled_s' to that file.
    """

    def __init__(
        self,
        stall_ms: float = 500.0,
        period_s: float = 5.0,
        *,
        port: int = 0,
        log_path: str | Path | None = None,
        cpu: int | str | None = None,
    ) -> None:
        self.stall_ms = stall_ms
        self.period_s = period_s
        self.port = port
        self.log_path = Path(log_path) if log_path is not None else None
        self.cpu = cpu
        self.proc: subprocess.Popen[str] | None = None
        self.started_at: float | None = None
        self.command: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> StallServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        self.command = [
            *pin(self.cpu),
            sys.executable,
            str(Path(__file__).resolve()),
            "stall-server",
            "--port",
            str(self.port),
            "--stall-ms",
            f"{self.stall_ms:g}",
            "--period-s",
            f"{self.period_s:g}",
        ]
        if self.log_path is not None:
            self.command += ["--log", str(self.log_path)]
        self.proc = subprocess.Popen(self.command, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            self.stop()
            raise RuntimeError(f"stall server did not start (said {line!r})")
        self.started_at = time.time()
        self.port = int(line.split()[1])

    def stop(self) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        self.proc = None

    def server_pids(self) -> list[int]:
        return [] if self.proc is None else [self.proc.pid]

    def stalls(self) -> list[dict[str, float]]:
        """The stalls logged so far (needs log_path)."""
        if self.log_path is None or not self.log_path.exists():
            return []
        rows = []
        for line in self.log_path.read_text().splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            index, epoch, offset, stalled = line.split()
            rows.append(
                {
                    "index": int(index),
                    "start_epoch_s": float(epoch),
                    "start_offset_s": float(offset),
                    "stalled_s": float(stalled),
                }
            )
        return rows


# --------------------------------------------------------------------------- analysis


_LOG_UNITS_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3}


def send_log_resolution_us(path: str | Path) -> float:
    """The clock step of a send log in microseconds, from its header comment.

    A comment naming the columns 'intended_ns' / 'intended_us' / 'intended_ms' sets
    the unit; without one the log is taken to be in microseconds.
    """
    with open(path) as f:
        for line in f:
            if not line.startswith("#"):
                if line.strip():
                    break
                continue
            m = re.search(r"intended_(ns|us|ms)\b", line)
            if m:
                return _LOG_UNITS_US[m.group(1)]
    return 1.0


def read_send_log(path: str | Path) -> tuple[list[float], list[float]]:
    """Read ``index intended actual`` lines; return (intended, actual) in index order.

    Times are returned in microseconds (ints for a microsecond log, floats when the
    header says the log is in ns or ms, see send_log_resolution_us). Lines starting
    with '#' and blank lines are skipped; the file need not be sorted.
    """
    unit = send_log_resolution_us(path)
    rows: list[tuple[int, int, int]] = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            parts = text.split()
            if len(parts) < 3:
                raise ValueError(f"{path}:{number}: expected 'index intended actual'")
            rows.append((int(parts[0]), int(parts[1]), int(parts[2])))
    rows.sort()
    if unit == 1.0:
        return [r[1] for r in rows], [r[2] for r in rows]
    return [r[1] * unit for r in rows], [r[2] * unit for r in rows]


def gaps_s(times_us: Sequence[int | float]) -> list[float]:
    """Inter-send gaps in seconds of the given send times (sorted first)."""
    ordered = sorted(times_us)
    return [(b - a) / 1e6 for a, b in itertools.pairwise(ordered)]


def kolmogorov_p_value(d: float, n: int) -> float:
    """Asymptotic p-value of a one-sample KS statistic d on n points.

    Q_KS(lambda) = 2 sum_{k>=1} (-1)^(k-1) exp(-2 k^2 lambda^2), with Stephens'
    small-sample correction lambda = (sqrt(n) + 0.12 + 0.11/sqrt(n)) d.
    """
    if n <= 0:
        return math.nan
    en = math.sqrt(n)
    lam = (en + 0.12 + 0.11 / en) * d
    if lam < 0.2:
        return 1.0  # the series converges slowly here and Q is 1 to many digits
    total = 0.0
    sign = 1.0
    previous = 0.0
    for k in range(1, 101):
        term = sign * 2.0 * math.exp(-2.0 * k * k * lam * lam)
        total += term
        if abs(term) <= 1e-10 * abs(total) or abs(term) <= 1e-12 * previous:
            return min(1.0, max(0.0, total))
        previous = abs(term)
        sign = -sign
    return min(1.0, max(0.0, total))


def ks_critical(n: int, alpha: float = 0.01) -> float:
    """Asymptotic KS critical value of D at level alpha (1.6276 at 1 %), same correction."""
    c = {0.01: 1.6276, 0.05: 1.3581, 0.1: 1.2238}.get(alpha)
    if c is None:
        c = math.sqrt(-0.5 * math.log(alpha / 2))
    en = math.sqrt(n)
    return c / (en + 0.12 + 0.11 / en)


def ks_exponential(
    gaps: Sequence[float], rate: float, *, resolution_s: float | None = None
) -> tuple[float, float, float]:
    """One-sample Kolmogorov-Smirnov test of gaps (seconds) against Exp(rate).

    Returns (D, critical value of D at 1 %, asymptotic p-value).

    With resolution_s=None, D is computed exactly on the sorted gaps against the
    continuous CDF F(x) = 1 - exp(-rate x). Gaps of times that were rounded to a clock
    of resolution r (the send log's integer microseconds) are multiples of r and, at
    rates where r*rate is not negligible, fail that test on quantisation alone (the
    first step of F is already 1 - exp(-r rate)). Pass resolution_s=r to compare with
    the exact distribution of such a gap, P(G <= k r) = (1/r) int_{kr}^{(k+1)r} F(s) ds
    (the fractional clock phase is uniform), on the lattice; that D is exact for the
    discrete law, and the continuous p-value is conservative for it. When rate*r is
    below 1e-4 (a nanosecond clock) the quantisation is negligible and the continuous
    test is used.
    """
    n = len(gaps)
    if n == 0:
        return math.nan, math.nan, math.nan
    if rate <= 0:
        raise ValueError("rate must be positive")
    xs = sorted(gaps)
    d = 0.0
    if resolution_s is None or rate * resolution_s < 1e-4:
        for i, x in enumerate(xs):
            f = 1.0 - math.exp(-rate * x) if x > 0 else 0.0
            d = max(d, (i + 1) / n - f, f - i / n)
    else:
        r = resolution_s
        ks = [round(x / r) for x in xs]
        lam = rate * r
        # G(k) = 1 - exp(-lam k) (1 - exp(-lam)) / lam for k >= 0; 0 for k < 0.
        factor = -math.expm1(-lam) / lam
        if ks[0] < 0:
            raise ValueError("negative gap")

        def cdf(k: int) -> float:
            return 1.0 - math.exp(-lam * k) * factor if k >= 0 else 0.0

        # Both CDFs are steps on the lattice, and between two observed values v < w the
        # empirical one is flat while G rises, so sup |Fn - G| is attained at k = v or
        # k = w - 1 (and at k = first - 1, where Fn = 0).
        d = cdf(ks[0] - 1)
        i = 0
        while i < n:
            v = ks[i]
            j = bisect.bisect_right(ks, v, i)
            fn = j / n
            d = max(d, abs(fn - cdf(v)))
            if j < n and ks[j] - 1 > v:
                d = max(d, abs(fn - cdf(ks[j] - 1)))
            i = j
    return d, ks_critical(n, 0.01), kolmogorov_p_value(d, n)


def dispersion_index(
    times_us: Sequence[int | float],
    bin_us: float = 1000,
    *,
    start_us: float | None = None,
    end_us: float | None = None,
) -> float:
    """Variance / mean of the number of events per bin (1 for Poisson, 0 for a clock).

    The window is [start_us, end_us), default [min, max] of the times; only whole bins
    inside it count, and empty bins count as zeros.
    """
    if not times_us:
        return math.nan
    start = min(times_us) if start_us is None else start_us
    end = max(times_us) + 1e-9 if end_us is None else end_us
    nbins = int((end - start) // bin_us)
    if nbins < 2:
        return math.nan
    counts = [0] * nbins
    for t in times_us:
        b = int((t - start) // bin_us)
        if 0 <= b < nbins:
            counts[b] += 1
    mean = sum(counts) / nbins
    if mean == 0:
        return math.nan
    var = sum((c - mean) ** 2 for c in counts) / nbins
    return var / mean


# --------------------------------------------------------------------------- process


def _cpu_ticks_all() -> list[int]:
    """The aggregate 'cpu' line of /proc/stat: user nice system idle iowait irq softirq steal."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    ticks = [int(x) for x in fields]
    return (ticks + [0] * 8)[:8]


def _cpu_ticks() -> tuple[int, int]:
    ticks = _cpu_ticks_all()
    return sum(ticks), ticks[3] + ticks[4]  # idle + iowait


def cpu_busy(interval_s: float = 1.0) -> float:
    """Fraction of all CPUs busy over interval_s (from /proc/stat; 0..1).

    Run it before a measurement to see whether something else (a build) is loading
    the machine: the benchmarks pin client and server to the two CPUs of the host.
    """
    total0, idle0 = _cpu_ticks()
    time.sleep(interval_s)
    total1, idle1 = _cpu_ticks()
    total = total1 - total0
    return 1.0 - (idle1 - idle0) / total if total > 0 else math.nan


def _proc_cpu_s(pid: int) -> float | None:
    """utime + stime of a live process in seconds, or None if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuAccount:
    """Where the CPU time went during a measurement, to spot a disturbed run.

    Splits the host's busy CPU time (from /proc/stat, steal included) into the client
    (this process's waited-for children: wrk, lanes), the server (the given live pids,
    e.g. the nginx master and worker) and this process; the rest is 'other' (a build,
    another VM). Use as a context manager; read .result afterwards.
    """

    def __init__(self, server_pids: Iterable[int] = ()) -> None:
        self.server_pids = list(server_pids)
        self.result: dict[str, float] = {}

    @staticmethod
    def _ours() -> tuple[float, float]:
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        me = resource.getrusage(resource.RUSAGE_SELF)
        return children.ru_utime + children.ru_stime, me.ru_utime + me.ru_stime

    def __enter__(self) -> CpuAccount:
        self._t0 = time.monotonic()
        self._ticks0 = _cpu_ticks_all()
        self._client0, self._self0 = self._ours()
        self._server0 = {p: _proc_cpu_s(p) for p in self.server_pids}
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        wall = time.monotonic() - self._t0
        ticks1 = _cpu_ticks_all()
        client1, self1 = self._ours()
        hz = os.sysconf("SC_CLK_TCK")
        delta = [b - a for a, b in zip(self._ticks0, ticks1, strict=True)]
        idle = delta[3] + delta[4]
        busy = (sum(delta[:8]) - idle) / hz
        steal = delta[7] / hz if len(delta) > 7 else 0.0
        server = 0.0
        for pid, before in self._server0.items():
            after = _proc_cpu_s(pid)
            if before is not None and after is not None:
                server += after - before
        client = client1 - self._client0
        mine = self1 - self._self0
        other = max(0.0, busy - client - server - mine)
        ncpu = os.cpu_count() or 1
        self.result = {
            "wall_s": round(wall, 3),
            "busy_cpu_s": round(busy, 3),
            "client_cpu_s": round(client, 3),
            "server_cpu_s": round(server, 3),
            "driver_cpu_s": round(mine, 3),
            "steal_cpu_s": round(steal, 3),
            "other_cpu_s": round(other, 3),
            "other_fraction": round(other / (wall * ncpu), 4) if wall > 0 else math.nan,
        }


def wait_until_idle(
    threshold: float = 0.1, max_wait_s: float = 0.0, interval_s: float = 1.0
) -> float:
    """Sample cpu_busy until it is below threshold or max_wait_s has passed; return it."""
    deadline = time.monotonic() + max_wait_s
    while True:
        busy = cpu_busy(interval_s)
        if busy < threshold or time.monotonic() >= deadline:
            return busy


def vm_rss_mb(pid: int) -> tuple[float, float] | None:
    """(VmRSS, VmHWM) of a process in MiB from /proc/PID/status, or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    values = {}
    for line in text.splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            name, value = line.split(":", 1)
            values[name] = int(value.split()[0]) / 1024
    if "VmRSS" not in values:
        return None
    return values["VmRSS"], values.get("VmHWM", math.nan)


def tree_rss_mb(pid: int) -> float | None:
    """Summed VmRSS in MiB of a process and all its descendants (None if it is gone)."""
    own = vm_rss_mb(pid)
    if own is None:
        return None
    total = own[0]
    stack = _children(pid)
    while stack:
        child = stack.pop()
        sample = vm_rss_mb(child)
        if sample is not None:
            total += sample[0]
            stack.extend(_children(child))
    return total


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="kit.py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    stall = sub.add_parser("stall-server", help="serve HTTP/1.1 and freeze periodically")
    stall.add_argument("--host", default="127.0.0.1")
    stall.add_argument("--port", type=int, default=0)
    stall.add_argument("--stall-ms", type=float, default=500.0)
    stall.add_argument("--period-s", type=float, default=5.0)
    stall.add_argument("--log", default=None, help="append each stall's start time here")
    args = parser.parse_args(argv)
    if args.command == "stall-server":
        serve_stalling(args.host, args.port, args.stall_ms, args.period_s, args.log)


if __name__ == "__main__":
    main()
