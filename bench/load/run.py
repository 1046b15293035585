#!/usr/bin/env python3
"""Load benchmarks of ``lanes bench`` on loopback (see bench/load/README.md).

    python bench/load/run.py {throughput,rate,stall,memory,all} [--out DIR]
                             [--repeats N] [--memory-seconds S] [--quick]

Writes one JSON per measurement, a summary JSON per benchmark and meta.json into
--out (default bench/load/out/), and prints a short summary table.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import math
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import kit  # noqa: E402

CLIENT_CPU = 0  # wrk and lanes
SERVER_CPU = 1  # nginx and the stall server
THREADS = 1  # client threads, for wrk and lanes alike
OPEN_LOOP_CONNECTIONS = 100  # connection cap for the open-loop runs against nginx
SEED = 1
RATE_TOLERANCE = 0.005  # sent / scheduled must be within 0.5 %
IDLE_THRESHOLD = 0.10  # CPU busy fraction before a run above which it is flagged
OTHER_THRESHOLD = 0.05  # share of host CPU taken by others during a run, flagged above


# --------------------------------------------------------------------------- plumbing


class LanesError(RuntimeError):
    """lanes bench failed or wrote no JSON."""


@dataclass
class Settings:
    out: Path
    repeats: int
    quick: bool
    memory_seconds: float
    lanes: list[str]
    wait_idle_s: float = 0.0
    throughput_path: str = "/index.html"
    baseline: list[str] | None = None


@dataclass
class Recorder:
    """Writes measurement JSON files and remembers every command run, for meta.json."""

    out: Path
    bench: str = ""
    commands: dict[str, list[str]] = field(default_factory=dict)
    started: dict[str, str] = field(default_factory=dict)
    finished: dict[str, str] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def command(self, cmd: Sequence[str]) -> None:
        self.commands.setdefault(self.bench, []).append(shlex.join(cmd))

    def write(self, name: str, data: dict[str, Any]) -> Path:
        path = self.out / f"{name}.json"
        path.write_text(json.dumps(data, indent=2, default=_json_default) + "\n")
        return path

    def fail(self, name: str, error: BaseException) -> dict[str, Any]:
        message = f"{name}: {type(error).__name__}: {error}"
        self.failures.append(message)
        print(f"  ! {message.splitlines()[0]}", file=sys.stderr)
        return {"error": f"{type(error).__name__}: {error}"}


def _json_default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def find_lanes(override: str | None) -> list[str]:
    """The lanes CLI: --lanes, else .venv/bin/lanes next to this Python, else PATH."""
    if override:
        return shlex.split(override)
    beside = Path(sys.executable).parent / "lanes"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("lanes")
    if found:
        return [found]
    raise SystemExit("lanes CLI not found: install the package into .venv or pass --lanes")


def run_lanes(
    settings: Settings,
    rec: Recorder,
    url: str,
    *,
    name: str,
    connections: int,
    duration_s: float,
    threads: int = THREADS,
    rate: float | None = None,
    arrival: str | None = None,
    seed: int | None = None,
    send_log: Path | None = None,
    timeout: str | None = None,
    cpu: int | None = CLIENT_CPU,
    rss_interval_s: float | None = None,
    server_pids: Sequence[int] = (),
    extra: Sequence[str] = (),
    lanes: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Run ``lanes bench`` once; the only place that knows the CLI's flags.

    ``lanes`` replaces the CLI command (settings.lanes), e.g. for the baseline build.

    Returns {"cmd", "returncode", "wall_s", "json_path", "result" (the parsed --json),
    "rss" ([[t_s, rss_mb, hwm_mb, tree_rss_mb], ...] when rss_interval_s is set; the
    tree sums any child processes), "cpu" (kit.CpuAccount over the run, server_pids
    being the server's processes)}. Raises LanesError
    when lanes exits non-zero or writes no JSON. Its stdout/stderr go to OUT/NAME.log.
    """
    json_path = settings.out / f"{name}.lanes.json"
    json_path.unlink(missing_ok=True)
    cmd = [
        *kit.pin(cpu),
        *(lanes or settings.lanes),
        "bench",
        url,
        "-c",
        str(connections),
        "-t",
        str(threads),
        "-d",
        f"{duration_s:g}s",
    ]
    if rate is not None:
        cmd += ["-R", f"{rate:g}"]
    if arrival is not None:
        cmd += ["--arrival", arrival]
    if seed is not None:
        cmd += ["--seed", str(seed)]
    if timeout is not None:
        cmd += ["--timeout", timeout]
    if send_log is not None:
        send_log.unlink(missing_ok=True)
        cmd += ["--send-log", str(send_log)]
    cmd += [*extra, "--json", str(json_path), "--quiet"]
    rec.command(cmd)

    log_path = settings.out / f"{name}.log"
    rss: list[list[float]] = []
    started = time.monotonic()
    with open(log_path, "w") as log, kit.CpuAccount(server_pids) as cpu_account:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        deadline = started + duration_s + 120
        while proc.poll() is None:
            now = time.monotonic()
            if now > deadline:
                proc.kill()
                proc.wait()
                raise LanesError(f"lanes bench ran past {duration_s + 120:g}s; killed")
            if rss_interval_s is not None:
                sample = kit.vm_rss_mb(proc.pid)
                tree = kit.tree_rss_mb(proc.pid)
                if sample is not None:
                    rss.append([round(now - started, 3), sample[0], sample[1], tree or sample[0]])
                # Sample on a fixed grid from the start, not every 1 s plus drift.
                step = rss_interval_s
                wait = step - ((time.monotonic() - started) % step)
            else:
                wait = 0.05
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=wait)
    wall = time.monotonic() - started
    if proc.returncode != 0 or not json_path.exists():
        tail = log_path.read_text(errors="replace")[-2000:]
        raise LanesError(
            f"{shlex.join(cmd)} exited {proc.returncode}"
            + ("" if json_path.exists() else " without writing --json")
            + f":\n{tail}"
        )
    return {
        "cmd": cmd,
        "returncode": proc.returncode,
        "wall_s": round(wall, 3),
        "json_path": json_path,
        "result": json.loads(json_path.read_text()),
        "rss": rss,
        "cpu": disturbance(cpu_account, name),
    }


def disturbance(account: kit.CpuAccount, label: str) -> dict[str, float]:
    """The CPU split of a finished measurement; warns when others took > 5 % of the host."""
    result = account.result
    if result.get("other_fraction", 0.0) > OTHER_THRESHOLD:
        print(
            f"  ! {label}: {result['other_fraction']:.0%} of the host's CPU went to other "
            "processes during the run: numbers disturbed",
            file=sys.stderr,
            flush=True,
        )
    return result


def settle(settings: Settings, label: str) -> float:
    """Before a measurement: how busy the CPUs are with nothing of ours running.

    Waits up to --wait-idle seconds for the load to drop under 10 %; warns when it
    does not. The fraction is recorded with each measurement (a concurrent build on
    this 2-CPU host halves wrk's numbers).
    """
    busy = kit.wait_until_idle(IDLE_THRESHOLD, settings.wait_idle_s)
    if busy >= IDLE_THRESHOLD:
        print(
            f"  ! {label}: CPUs {busy:.0%} busy before the run (something else is running)",
            file=sys.stderr,
            flush=True,
        )
    return round(busy, 3)


def _lanes_brief(result: dict[str, Any]) -> dict[str, Any]:
    """The lanes --json fields that summaries quote (the full file stays beside it)."""
    keys = (
        "mode",
        "requests",
        "duration_s",
        "rps",
        "latency_ms",
        "service_time_ms",
        "late_sends_fraction",
        "errors",
        "scheduled",
        "sent",
    )
    return {k: result.get(k) for k in keys}


def _median(values: Sequence[float]) -> float | None:
    values = [v for v in values if v is not None and math.isfinite(v)]
    return statistics.median(values) if values else None


def _fmt(value: Any, spec: str = ".0f") -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, (int, float)):
        return format(value, spec) if math.isfinite(value) else "n/a"
    return str(value)


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print(f"\n{title}")
    print("  " + "  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)))
    for row in rows:
        print("  " + "  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))


# --------------------------------------------------------------------------- send-log analysis


def analyse_send_log(path: Path, rate: float, duration_s: float) -> dict[str, Any]:
    """Arrival-process checks over a lanes send log.

    The log's clock step comes from its header (integer microseconds unless it says
    ns). KS uses the lattice form of the exponential at that step (kit.ks_exponential
    with resolution_s) because whole microseconds alone fail the continuous test at
    20k req/s; dispersion is per 1 ms bin over [0, duration).
    """
    resolution_us = kit.send_log_resolution_us(path)
    intended, actual = kit.read_send_log(path)
    window_us = duration_s * 1e6
    out: dict[str, Any] = {"logged": len(actual), "resolution_us": resolution_us}
    if len(actual) < 3:
        return out
    for label, times in (("intended", intended), ("actual", actual)):
        d, crit, p = kit.ks_exponential(kit.gaps_s(times), rate, resolution_s=resolution_us * 1e-6)
        out[f"ks_{label}"] = {"D": d, "critical_1pct": crit, "p_value": p, "pass": d < crit}
        out[f"dispersion_{label}"] = kit.dispersion_index(times, 1000, start_us=0, end_us=window_us)
        inside = sum(1 for t in times if 0 <= t < window_us)
        out[f"{label}_rate"] = inside / duration_s
    lateness = sorted(a - i for i, a in zip(intended, actual, strict=True))
    n = len(lateness)
    out["lateness_us"] = {
        "p50": lateness[n // 2],
        "p99": lateness[min(n - 1, int(n * 0.99))],
        "p999": lateness[min(n - 1, int(n * 0.999))],
        "max": lateness[-1],
    }
    out["late_over_1ms_fraction"] = sum(1 for x in lateness if x > 1000) / n
    return out


def _dispersion_10ms(result: dict[str, Any]) -> float | None:
    """Index of dispersion of the sends per 10 ms bin, from the engine's own sends_10ms."""
    counts = (result.get("sends_10ms") or {}).get("counts") or []
    if len(counts) < 10:
        return None
    mean = statistics.fmean(counts)
    return statistics.pvariance(counts, mean) / mean if mean else None


# --------------------------------------------------------------------------- benchmarks


def _note_cpu(
    record: dict[str, Any],
    others: list[float],
    util: dict[str, dict[str, list[float]]],
    requests: int | None,
) -> None:
    cpu = record.get("cpu") or {}
    others.append(cpu.get("other_fraction", math.nan))
    wall = cpu.get("wall_s")
    side = util[record["tool"]]
    if wall:
        side["client"].append(cpu["client_cpu_s"] / wall)
        side["server"].append(cpu["server_cpu_s"] / wall)
    if requests:
        side["client_us_per_request"].append(cpu.get("client_cpu_s", math.nan) / requests * 1e6)
        side["server_us_per_request"].append(cpu.get("server_cpu_s", math.nan) / requests * 1e6)


def _throughput_once(
    settings: Settings, rec: Recorder, web: kit.Nginx, url: str, tool: str, name: str, conns: int
) -> tuple[dict[str, Any], float | None, int | None]:
    """One closed-loop run of ``tool`` (wrk, lanes or baseline): its record, req/s, requests."""
    duration = 3.0 if settings.quick else 10.0
    if tool == "wrk":
        with kit.CpuAccount(web.server_pids()) as account:
            w = kit.run_wrk(url, conns, THREADS, duration, cpu=CLIENT_CPU)
        w["cpu"] = disturbance(account, name)
        rec.command(w["cmd"])
        return {"tool": tool, **w}, w["rps"], w.get("requests")
    build = settings.baseline if tool == "baseline" else None
    run = run_lanes(
        settings,
        rec,
        url,
        name=name,
        connections=conns,
        duration_s=duration,
        lanes=build,
        server_pids=web.server_pids(),
    )
    record = {"tool": tool, **run, "brief": _lanes_brief(run["result"])}
    del record["result"]
    return record, run["result"].get("rps"), run["result"].get("requests")


def bench_throughput(settings: Settings, rec: Recorder) -> dict[str, Any]:
    """Closed loop, same connections, 1 thread, client on CPU 0: wrk and lanes (and the
    --lanes-baseline build) in turn, the order reversed every other repeat (A B, B A, ...)."""
    duration = 3.0 if settings.quick else 10.0
    tools = ["wrk", "lanes"] + (["baseline"] if settings.baseline else [])
    summary: dict[str, Any] = {
        "duration_s": duration,
        "threads": THREADS,
        "path": settings.throughput_path,
        "tools": tools,
        "baseline": shlex.join(settings.baseline) if settings.baseline else None,
        "by_connections": {},
    }
    with kit.Nginx(cpu=SERVER_CPU) as web:
        rec.command(web.command)
        url = web.url + settings.throughput_path
        kit.run_wrk(url, 50, THREADS, 1, cpu=CLIENT_CPU)  # warm-up, not recorded
        for connections in (50, 10):
            rps: dict[str, list[float | None]] = {t: [] for t in tools}
            others: list[float] = []  # share of host CPU taken by other processes, per run
            # CPU of the client and of nginx per wall second and per request, per tool: shows
            # which side saturated (nginx's one worker can be the limit, not the client).
            util: dict[str, dict[str, list[float]]] = {
                t: {
                    k: []
                    for k in ("client", "server", "client_us_per_request", "server_us_per_request")
                }
                for t in tools
            }
            for rep in range(1, settings.repeats + 1):
                for tool in tools if rep % 2 else tools[::-1]:
                    name = f"throughput-c{connections}-r{rep}-{tool}"
                    print(f"  {name}", flush=True)
                    bg = settle(settings, name)
                    requests = None
                    try:
                        record, value, requests = _throughput_once(
                            settings, rec, web, url, tool, name, connections
                        )
                    except Exception as e:
                        record, value = {"tool": tool, **rec.fail(name, e)}, None
                    rps[tool].append(value)
                    record["background_busy"] = bg
                    rec.write(
                        name,
                        {
                            "bench": "throughput",
                            "connections": connections,
                            "repeat": rep,
                            **record,
                        },
                    )
                    _note_cpu(record, others, util, requests)
            entry: dict[str, Any] = {
                "wrk_rps": rps["wrk"],
                "median_wrk_rps": _median([x for x in rps["wrk"] if x is not None]),
            }
            for tool in tools[1:]:
                ratios = [
                    (b / a) if a and b else None for a, b in zip(rps["wrk"], rps[tool], strict=True)
                ]
                prefix = "" if tool == "lanes" else "baseline_"
                entry[f"{tool}_rps"] = rps[tool]
                entry[f"median_{tool}_rps"] = _median([x for x in rps[tool] if x is not None])
                entry[f"{prefix}ratios"] = ratios
                entry[f"median_{prefix}ratio"] = _median([x for x in ratios if x is not None])
            entry["other_fraction_max"] = max(others, default=None)
            entry["cpu_utilisation_median"] = {
                tool: {side: _median(v) for side, v in sides.items()}
                for tool, sides in util.items()
            }
            summary["by_connections"][str(connections)] = entry
    rec.write("throughput", {"bench": "throughput", **summary})
    rows = [
        [
            c,
            _fmt(s["median_wrk_rps"]),
            _fmt(s["median_lanes_rps"]),
            _fmt(s["median_ratio"], ".3f"),
            _fmt(s.get("median_baseline_ratio"), ".3f"),
            str(len(s["ratios"])),
            _fmt(s["other_fraction_max"], ".1%"),
            "/".join(
                _fmt(s["cpu_utilisation_median"][t]["client_us_per_request"], ".1f") for t in tools
            ),
            "/".join(_fmt(s["cpu_utilisation_median"][t]["server"], ".0%") for t in tools),
        ]
        for c, s in summary["by_connections"].items()
    ]
    print_table(
        f"throughput (closed loop {settings.throughput_path}, {duration:g}s, -t {THREADS}, "
        f"client CPU {CLIENT_CPU}, nginx CPU {SERVER_CPU}; {'/'.join(tools)})",
        [
            "conns",
            "wrk rps",
            "lanes rps",
            "lanes/wrk",
            "baseline/wrk",
            "pairs",
            "others max",
            "client us/req",
            "nginx cpu",
        ],
        rows,
    )
    return summary


def bench_rate(settings: Settings, rec: Recorder) -> dict[str, Any]:
    """Open loop at fixed rates: is the schedule kept, and is Poisson really Poisson?"""
    duration = 3.0 if settings.quick else 10.0
    rates = (5_000.0, 20_000.0)
    summary: dict[str, Any] = {
        "duration_s": duration,
        "connections": OPEN_LOOP_CONNECTIONS,
        "tolerance": RATE_TOLERANCE,
        "runs": {},
    }
    with kit.Nginx(cpu=SERVER_CPU) as web:
        rec.command(web.command)
        url = web.url + "/index.html"
        for rate in rates:
            for arrival in ("poisson", "constant"):
                name = f"rate-{rate:g}-{arrival}"
                print(f"  {name}", flush=True)
                send_log = settings.out / f"{name}.sendlog"
                entry: dict[str, Any] = {
                    "rate": rate,
                    "arrival": arrival,
                    "background_busy": settle(settings, name),
                }
                try:
                    run = run_lanes(
                        settings,
                        rec,
                        url,
                        name=name,
                        connections=OPEN_LOOP_CONNECTIONS,
                        duration_s=duration,
                        server_pids=web.server_pids(),
                        rate=rate,
                        arrival=arrival,
                        seed=SEED,
                        send_log=send_log,
                    )
                    res = run["result"]
                    sent, scheduled = res.get("sent"), res.get("scheduled")
                    ratio = sent / scheduled if sent is not None and scheduled else None
                    # The schedule's count in the window is rate x duration (the engine's
                    # count rule); sent must be within the tolerance of it and never above
                    # what was scheduled.
                    window = rate * duration
                    over_window = sent / window if sent is not None else None
                    entry.update(
                        cmd=run["cmd"],
                        cpu=run["cpu"],
                        brief=_lanes_brief(res),
                        sent_over_scheduled=ratio,
                        window_count=window,
                        sent_over_window=over_window,
                        schedule_kept=over_window is not None
                        and abs(over_window - 1) <= RATE_TOLERANCE
                        and sent is not None
                        and scheduled is not None
                        and sent <= scheduled,
                        dispersion_10ms=_dispersion_10ms(res),
                        achieved_over_requested=(res.get("rps") or 0) / rate,
                        late_sends_fraction=res.get("late_sends_fraction"),
                        send_log=send_log,
                        analysis=analyse_send_log(send_log, rate, duration),
                    )
                except Exception as e:
                    entry.update(rec.fail(name, e))
                rec.write(name, {"bench": "rate", **entry})
                summary["runs"][name] = entry
    rec.write("rate", {"bench": "rate", **summary})
    rows = []
    for r in summary["runs"].values():
        a = r.get("analysis", {})
        ks = a.get("ks_actual", {})
        ks_i = a.get("ks_intended", {})
        rows.append(
            [
                f"{r['rate']:g}",
                r["arrival"],
                _fmt(r.get("sent_over_window"), ".4f"),
                _fmt(r.get("schedule_kept")),
                _fmt(a.get("actual_rate")),
                _fmt(r.get("achieved_over_requested"), ".4f"),
                _fmt(ks_i.get("p_value"), ".3f"),
                _fmt(ks.get("D"), ".4f"),
                _fmt(ks.get("p_value"), ".3f"),
                _fmt(a.get("dispersion_actual"), ".3f"),
                _fmt(r.get("dispersion_10ms"), ".3f"),
                _fmt(r.get("late_sends_fraction"), ".4f"),
                _fmt(r.get("cpu", {}).get("other_fraction"), ".1%"),
            ]
        )
    print_table(
        f"rate (open loop, {duration:g}s, -c {OPEN_LOOP_CONNECTIONS}; KS vs Exp(rate); "
        "constant is expected to fail KS and show dispersion ~0)",
        [
            "rate",
            "arrival",
            "sent/(R*d)",
            "ok",
            "send/s",
            "rps/R",
            "KS p int",
            "KS D act",
            "KS p act",
            "disp act",
            "disp 10ms",
            "late",
            "others",
        ],
        rows,
    )
    return summary


def bench_stall(settings: Settings, rec: Recorder) -> dict[str, Any]:
    """Coordinated omission: latency from intended send vs service time from actual send."""
    duration = 12.0 if settings.quick else 20.0
    stall_ms, period_s, rate = 500.0, 5.0, 1_000.0
    # A request arriving in a stall waits out the rest of it: 10 % of requests wait
    # U(0, 500 ms), so the p99 of latency from the intended send is about 450 ms.
    expected_p99 = stall_ms * (1 - 0.01 * period_s * 1e3 / stall_ms)
    summary: dict[str, Any] = {
        "duration_s": duration,
        "rate": rate,
        "stall_ms": stall_ms,
        "period_s": period_s,
        "expected_latency_p99_ms": expected_p99,
        "runs": {},
    }
    for connections in (8, 1000):
        name = f"stall-c{connections}"
        print(f"  {name}", flush=True)
        entry: dict[str, Any] = {
            "connections": connections,
            "background_busy": settle(settings, name),
        }
        stall_log = settings.out / f"{name}.stalls"
        send_log = settings.out / f"{name}.sendlog"
        try:
            with kit.StallServer(stall_ms, period_s, log_path=stall_log, cpu=SERVER_CPU) as srv:
                rec.command(srv.command)
                run = run_lanes(
                    settings,
                    rec,
                    srv.url + "/",
                    name=name,
                    connections=connections,
                    duration_s=duration,
                    server_pids=srv.server_pids(),
                    rate=rate,
                    arrival="poisson",
                    seed=SEED,
                    send_log=send_log,
                    timeout="10s",
                )
                entry["stalls"] = srv.stalls()
            res = run["result"]
            lat, svc = res.get("latency_ms") or {}, res.get("service_time_ms") or {}
            entry.update(
                cmd=run["cmd"],
                cpu=run["cpu"],
                brief=_lanes_brief(res),
                latency_p99_ms=lat.get("p99"),
                service_time_p99_ms=svc.get("p99"),
                latency_max_ms=lat.get("max"),
                service_time_max_ms=svc.get("max"),
                late_sends_fraction=res.get("late_sends_fraction"),
                send_log=send_log,
                stall_log=stall_log,
                analysis=analyse_send_log(send_log, rate, duration),
            )
        except Exception as e:
            entry.update(rec.fail(name, e))
        settings_only = {k: v for k, v in summary.items() if k != "runs"}
        rec.write(name, {"bench": "stall", **settings_only, **entry})
        summary["runs"][name] = entry
    rec.write("stall", {"bench": "stall", **summary})
    rows = [
        [
            str(e["connections"]),
            _fmt(e.get("latency_p99_ms"), ".1f"),
            _fmt(e.get("service_time_p99_ms"), ".1f"),
            _fmt(e.get("latency_max_ms"), ".1f"),
            _fmt(e.get("service_time_max_ms"), ".1f"),
            _fmt(e.get("late_sends_fraction"), ".4f"),
            str(len(e.get("stalls", []))),
            _fmt(e.get("cpu", {}).get("other_fraction"), ".1%"),
        ]
        for e in summary["runs"].values()
    ]
    print_table(
        f"stall ({stall_ms:g} ms every {period_s:g} s, {rate:g} req/s Poisson, {duration:g}s; "
        f"expected latency p99 ~{expected_p99:.0f} ms)",
        ["conns", "lat p99", "svc p99", "lat max", "svc max", "late", "stalls", "others"],
        rows,
    )
    return summary


def bench_memory(settings: Settings, rec: Recorder) -> dict[str, Any]:
    """Open loop 20k req/s for a long run; VmRSS of the lanes process every second."""
    seconds = settings.memory_seconds
    rate = 20_000.0
    name = "memory"
    print(f"  {name}: {seconds:g}s at {rate:g} req/s", flush=True)
    summary: dict[str, Any] = {
        "duration_s": seconds,
        "rate": rate,
        "background_busy": settle(settings, name),
    }
    with kit.Nginx(cpu=SERVER_CPU) as web:
        rec.command(web.command)
        try:
            run = run_lanes(
                settings,
                rec,
                web.url + "/index.html",
                name=name,
                connections=OPEN_LOOP_CONNECTIONS,
                duration_s=seconds,
                server_pids=web.server_pids(),
                rate=rate,
                arrival="poisson",
                seed=SEED,
                rss_interval_s=1.0,
            )
            rss = run["rss"]
            at_10 = next((r[1] for r in rss if r[0] >= 10.0), None)
            end = rss[-1][1] if rss else None
            summary.update(
                cmd=run["cmd"],
                cpu=run["cpu"],
                brief=_lanes_brief(run["result"]),
                samples=len(rss),
                max_rss_mb=max((r[1] for r in rss), default=None),
                max_tree_rss_mb=max((r[3] for r in rss), default=None),
                hwm_mb=rss[-1][2] if rss else None,
                rss_at_10s_mb=at_10,
                rss_end_mb=end,
                growth_after_10s_mb=(end - at_10)
                if end is not None and at_10 is not None
                else None,
                rss_series=rss,
            )
        except Exception as e:
            summary.update(rec.fail(name, e))
    rec.write("memory", {"bench": "memory", **summary})
    brief = summary.get("brief") or {}
    print_table(
        f"memory (open loop {rate:g} req/s Poisson, {seconds:g}s, -c {OPEN_LOOP_CONNECTIONS})",
        ["max RSS MB", "RSS@10s MB", "RSS end MB", "growth MB", "rps", "late", "others"],
        [
            [
                _fmt(summary.get("max_rss_mb"), ".1f"),
                _fmt(summary.get("rss_at_10s_mb"), ".1f"),
                _fmt(summary.get("rss_end_mb"), ".1f"),
                _fmt(summary.get("growth_after_10s_mb"), "+.1f"),
                _fmt(brief.get("rps")),
                _fmt(brief.get("late_sends_fraction"), ".4f"),
                _fmt(summary.get("cpu", {}).get("other_fraction"), ".1%"),
            ]
        ],
    )
    return summary


BENCHES: dict[str, Callable[[Settings, Recorder], dict[str, Any]]] = {
    "throughput": bench_throughput,
    "rate": bench_rate,
    "stall": bench_stall,
    "memory": bench_memory,
}


# --------------------------------------------------------------------------- meta


def _run_text(cmd: Sequence[str]) -> str:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (done.stdout or done.stderr).strip()


def machine_info(settings: Settings) -> dict[str, Any]:
    cpu_model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_total = ""
    with contextlib.suppress(OSError, IndexError):
        mem_total = Path("/proc/meminfo").read_text().splitlines()[0].split(":", 1)[1].strip()
    try:
        from importlib.metadata import version

        lanes_version = version("lanes")
    except Exception:
        lanes_version = ""
    repo = HERE.parent.parent
    return {
        "uname": _run_text(["uname", "-a"]),
        "cpu_model": cpu_model,
        "nproc": _run_text(["nproc"]),
        "mem_total": mem_total,
        "python": platform.python_version(),
        "versions": {**kit.tool_versions(), "lanes": lanes_version},
        "lanes_cli": settings.lanes,
        "git_commit": _run_text(["git", "-C", str(repo), "rev-parse", "HEAD"]),
        "git_dirty": bool(_run_text(["git", "-C", str(repo), "status", "--porcelain"])),
        "pinning": {"client_cpu": CLIENT_CPU, "server_cpu": SERVER_CPU, "threads": THREADS},
    }


def write_meta(settings: Settings, rec: Recorder, argv: Sequence[str]) -> None:
    """meta.json: machine and versions, plus per benchmark the date and exact commands.

    Benchmarks run into the same OUT by separate invocations accumulate under "runs".
    """
    path = settings.out / "meta.json"
    meta: dict[str, Any] = {}
    if path.exists():
        try:
            meta = json.loads(path.read_text())
        except ValueError:
            meta = {}
    meta.update(machine_info(settings))
    runs = meta.setdefault("runs", {})
    for bench, commands in rec.commands.items():
        runs[bench] = {
            "started": rec.started.get(bench),
            "finished": rec.finished.get(bench),
            "invocation": shlex.join([sys.executable, *argv]),
            "quick": settings.quick,
            "repeats": settings.repeats,
            "commands": commands,
            "failures": [f for f in rec.failures if f.startswith(bench)],
        }
    path.write_text(json.dumps(meta, indent=2) + "\n")


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench", choices=[*BENCHES, "all"])
    parser.add_argument("--out", type=Path, default=HERE / "out", help="default: %(default)s")
    parser.add_argument(
        "--repeats", type=int, default=None, help="wrk/lanes pairs (default 5, --quick 1)"
    )
    parser.add_argument(
        "--memory-seconds",
        type=float,
        default=None,
        help="length of the memory run (default 600, --quick 60)",
    )
    parser.add_argument("--quick", action="store_true", help="short smoke run")
    parser.add_argument(
        "--throughput-path",
        default="/index.html",
        help="nginx path for the throughput runs: /index.html (default) or /empty (204)",
    )
    parser.add_argument(
        "--wait-idle",
        type=float,
        default=0.0,
        metavar="S",
        help="before each measurement wait up to S seconds for the CPUs to be idle (<10%%)",
    )
    parser.add_argument("--lanes", default=None, help="lanes CLI command (default: beside python)")
    parser.add_argument(
        "--lanes-baseline",
        default=None,
        metavar="CMD",
        help="throughput: also run this lanes CLI command (another build) in turn with wrk and "
        "lanes, and report its ratio to wrk",
    )
    args = parser.parse_args(argv[1:])

    settings = Settings(
        out=args.out.resolve(),
        repeats=args.repeats if args.repeats is not None else (1 if args.quick else 5),
        quick=args.quick,
        memory_seconds=(
            args.memory_seconds if args.memory_seconds is not None else (60 if args.quick else 600)
        ),
        lanes=find_lanes(args.lanes),
        wait_idle_s=args.wait_idle,
        throughput_path=args.throughput_path,
        baseline=shlex.split(args.lanes_baseline) if args.lanes_baseline else None,
    )
    settings.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    kit.ensure_tools(["nginx", "wrk"])

    rec = Recorder(settings.out)
    names = list(BENCHES) if args.bench == "all" else [args.bench]
    try:
        for bench in names:
            print(f"== {bench}", flush=True)
            rec.bench = bench
            rec.commands.setdefault(bench, [])
            rec.started[bench] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
            BENCHES[bench](settings, rec)
            rec.finished[bench] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    finally:
        write_meta(settings, rec, argv)
    print(f"\nresults in {settings.out}")
    if rec.failures:
        print(f"{len(rec.failures)} measurement(s) failed:", file=sys.stderr)
        for failure in rec.failures:
            print("  " + failure.splitlines()[0], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
