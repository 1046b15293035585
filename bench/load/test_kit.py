"""Checks of bench/load/kit.py, run by `make test`; alone: pytest bench/load/test_kit.py.

The analysis checks use synthetic schedules with fixed seeds (deterministic). The nginx,
wrk and stall-server checks skip when the tools are missing.
"""

from __future__ import annotations

import math
import shutil
import socket
import time
from pathlib import Path

import kit
import numpy as np
import pytest

RATE = 20_000.0  # req/s
SECONDS = 10.0


def poisson_times_us(rate: float, seconds: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = int(rate * seconds * 1.2) + 100
    times = np.cumsum(rng.exponential(1.0 / rate, n)) * 1e6
    return times[times < seconds * 1e6]


def constant_times_us(rate: float, seconds: float) -> np.ndarray:
    return np.arange(0.0, seconds * 1e6, 1e6 / rate)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("rate", [5_000.0, RATE])
def test_poisson_passes_ks_and_has_unit_dispersion(rate: float, seed: int) -> None:
    times = poisson_times_us(rate, SECONDS, seed)
    d, crit, p = kit.ks_exponential(kit.gaps_s(times.tolist()), rate)
    assert d < crit
    assert p > 0.01
    disp = kit.dispersion_index(times.tolist(), 1000, start_us=0, end_us=SECONDS * 1e6)
    assert disp == pytest.approx(1.0, abs=0.06)


@pytest.mark.parametrize("rate", [5_000.0, RATE])
def test_constant_rate_fails_ks_and_has_zero_dispersion(rate: float) -> None:
    times = constant_times_us(rate, SECONDS)
    d, crit, p = kit.ks_exponential(kit.gaps_s(times.tolist()), rate)
    assert d > crit
    assert p < 1e-6
    disp = kit.dispersion_index(times.tolist(), 1000, start_us=0, end_us=SECONDS * 1e6)
    assert disp == pytest.approx(0.0, abs=0.01)


def test_whole_microsecond_times_need_the_lattice_test() -> None:
    # The send log holds integer microseconds; at 20k req/s (mean gap 50 us) that
    # quantisation alone fails the continuous test, and the lattice form accepts it.
    times = np.floor(poisson_times_us(RATE, SECONDS, 7)).astype(np.int64)
    gaps = kit.gaps_s(times.tolist())
    d, crit, _ = kit.ks_exponential(gaps, RATE)
    assert d > crit
    d, crit, p = kit.ks_exponential(gaps, RATE, resolution_s=1e-6)
    assert d < crit
    assert p > 0.01
    # ... and the lattice test still rejects a clock and a wrong rate.
    clock = np.round(constant_times_us(RATE, SECONDS)).astype(np.int64)
    d, crit, _ = kit.ks_exponential(kit.gaps_s(clock.tolist()), RATE, resolution_s=1e-6)
    assert d > crit
    d, crit, _ = kit.ks_exponential(gaps, RATE * 1.02, resolution_s=1e-6)
    assert d > crit


def test_ks_rejects_a_wrong_rate() -> None:
    times = poisson_times_us(RATE, SECONDS, 4)
    d, crit, p = kit.ks_exponential(kit.gaps_s(times.tolist()), RATE * 1.02)
    assert d > crit
    assert p < 0.01


def test_ks_exact_d_on_a_tiny_sample() -> None:
    # Gaps at the quartiles of Exp(1): F = 0.25, 0.5, 0.75 -> D = max(1/3 - 1/4, ...) = 1/4.
    gaps = [-math.log(1 - q) for q in (0.25, 0.5, 0.75)]
    d, _, _ = kit.ks_exponential(gaps, 1.0)
    assert d == pytest.approx(0.25)


def test_kolmogorov_p_value_matches_known_quantiles() -> None:
    n = 10**8  # the correction vanishes; lambda = sqrt(n) * d
    for lam, p in ((1.2238, 0.10), (1.3581, 0.05), (1.6276, 0.01), (0.5, 0.9639)):
        assert kit.kolmogorov_p_value(lam / math.sqrt(n), n) == pytest.approx(p, abs=2e-4)
    assert kit.kolmogorov_p_value(0.0, 100) == 1.0
    assert kit.ks_critical(n) == pytest.approx(1.6276 / math.sqrt(n), rel=1e-4)


def test_dispersion_of_a_burst_is_large() -> None:
    times = [0.0] * 1000 + [9_999.0]
    assert kit.dispersion_index(times, 1000) > 100


def test_read_send_log_sorts_by_index_and_skips_comments(tmp_path: Path) -> None:
    log = tmp_path / "send.log"
    log.write_text(
        "# lanes send log\n# index intended_us actual_us\n2 300 310\n0 100 101\n\n1 200 250\n"
    )
    intended, actual = kit.read_send_log(log)
    assert intended == [100, 200, 300]
    assert actual == [101, 250, 310]


def test_read_send_log_in_nanoseconds(tmp_path: Path) -> None:
    log = tmp_path / "send.log"
    log.write_text("# index intended_ns sent_ns (nanoseconds)\n1 2000 2500\n0 1000 1500\n")
    assert kit.send_log_resolution_us(log) == pytest.approx(1e-3)
    intended, actual = kit.read_send_log(log)
    assert intended == pytest.approx([1.0, 2.0])
    assert actual == pytest.approx([1.5, 2.5])
    plain = tmp_path / "plain.log"
    plain.write_text("0 10 11\n")
    assert kit.send_log_resolution_us(plain) == 1.0


def _lattice_d_brute_force(gaps: list[float], rate: float, r: float) -> float:
    ks = sorted(round(g / r) for g in gaps)
    lam = rate * r
    factor = -math.expm1(-lam) / lam
    d = 0.0
    for k in range(ks[-1] + 1):
        fn = sum(1 for x in ks if x <= k) / len(ks)
        d = max(d, abs(fn - (1 - math.exp(-lam * k) * factor)))
    return d


@pytest.mark.parametrize("seed", [11, 12])
def test_lattice_d_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    times = np.floor(np.cumsum(rng.exponential(1 / 3000.0, 400)) * 1e6)
    gaps = kit.gaps_s(times.tolist())
    d, _, _ = kit.ks_exponential(gaps, 2500.0, resolution_s=1e-6)
    assert d == pytest.approx(_lattice_d_brute_force(gaps, 2500.0, 1e-6), abs=1e-12)


def test_lattice_handles_long_gaps_and_fine_clocks() -> None:
    gaps = [1e-6 * k for k in (1, 5, 40, 200, 500_000_000)]  # one gap of 500 s
    d, _, _ = kit.ks_exponential(gaps, 1000.0, resolution_s=1e-6)
    assert 0 < d <= 1
    # A nanosecond clock falls back to the continuous test.
    ns_gaps = kit.gaps_s(poisson_times_us(RATE, 2.0, 5).round(3).tolist())
    assert kit.ks_exponential(ns_gaps, RATE, resolution_s=1e-9) == kit.ks_exponential(ns_gaps, RATE)


WRK_OUTPUT = """\
Running 3s test @ http://127.0.0.1:8080/index.html
  1 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   646.39us  200.32us   1.01s    90.45%
    Req/Sec    77.00k     7.05k   95.38k    73.33%
  Latency Distribution
     50%  637.00us
     75%  713.00us
     90%  790.00us
     99%    1.35ms
  229476 requests in 3.00s, 191.49MB read
  Socket errors: connect 1, read 2, write 3, timeout 4
  Non-2xx or 3xx responses: 5
Requests/sec:  76464.22
Transfer/sec:     63.81MB
"""


def test_parse_wrk() -> None:
    r = kit.parse_wrk(WRK_OUTPUT)
    assert r["rps"] == pytest.approx(76464.22)
    assert r["requests"] == 229476
    assert r["duration_s"] == pytest.approx(3.0)
    assert r["latency_avg_ms"] == pytest.approx(0.64639)
    assert r["latency_max_ms"] == pytest.approx(1010.0)
    assert r["latency_p50_ms"] == pytest.approx(0.637)
    assert r["latency_p99_ms"] == pytest.approx(1.35)
    assert r["errors"] == {"connect": 1, "read": 2, "write": 3, "timeout": 4}
    assert r["non_2xx"] == 5


def test_ensure_tools_needs_root_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kit.shutil, "which", lambda name: None if name == "wrk" else "/bin/x")
    monkeypatch.setattr(kit.os, "geteuid", lambda: 1000)
    with pytest.raises(kit.ToolError, match="root"):
        kit.ensure_tools(["wrk"])


def _get(sock: socket.socket, request: bytes, responses: int = 1) -> bytes:
    sock.sendall(request)
    data = b""
    while data.count(b"HTTP/1.1 ") < responses or not data.endswith(b"ok\n"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def test_stall_server_keeps_alive_and_stalls(tmp_path: Path) -> None:
    log = tmp_path / "stalls.log"
    with kit.StallServer(stall_ms=200, period_s=0.5, log_path=log) as server:
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            assert _get(sock, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").startswith(b"HTTP/1.1 200")
            body = b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd"
            assert _get(sock, body).startswith(b"HTTP/1.1 200")
            pipelined = _get(sock, b"GET /a HTTP/1.1\r\n\r\n" * 3, responses=3)
            assert pipelined.count(b"200 OK") == 3
            # Keep asking for 1.2 s: at least one answer must take ~200 ms.
            slowest = 0.0
            count = 0
            end = time.monotonic() + 1.2
            while time.monotonic() < end:
                t0 = time.monotonic()
                _get(sock, b"GET / HTTP/1.1\r\n\r\n")
                slowest = max(slowest, time.monotonic() - t0)
                count += 1
        stalls = server.stalls()
    assert 0.12 < slowest < 0.4
    assert count > 1000  # a single connection alone does well over 1,000 req/s
    assert len(stalls) >= 2
    assert all(s["stalled_s"] >= 0.2 for s in stalls)
    assert stalls[1]["start_offset_s"] == pytest.approx(1.0, abs=0.05)


@pytest.mark.skipif(
    shutil.which("nginx") is None or shutil.which("wrk") is None, reason="needs nginx and wrk"
)
def test_nginx_and_wrk_smoke() -> None:
    with kit.Nginx() as web:
        result = kit.run_wrk(web.url + "/index.html", 10, 1, 1)
        empty = kit.run_wrk(web.url + "/empty", 10, 1, 1)
        prefix = web.prefix
    assert prefix is not None and not prefix.exists()
    assert result["rps"] > 1000
    assert result["non_2xx"] == 0
    assert sum(result["errors"].values()) == 0
    assert empty["rps"] > 1000
    assert empty["non_2xx"] == 0
