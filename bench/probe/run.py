"""Benchmark of ``lanes probe`` in syn mode on loopback; figures for docs/results/probe.md.

The fleet: 10,000 targets = 100 loopback addresses (127.0.0.1 ... 127.0.0.100) x 100 ports. Half
the ports have a listener bound to 0.0.0.0 (so every 127.0.0.x answers SYN-ACK: expected state
``up``); the other half are held by a bound, never-listening socket (so they answer RST and no
other program can take them: expected ``refused``). Ports alternate in the file.

Each scenario runs in a child process (``run.py worker``) that builds the fleet, probes it with
:mod:`lanes.probe` (the native prober on its own thread), and records every round report, event
and notice. After every round it compares every target's reported state with the expected one.
CPU is measured three ways: the child process (user + system, ``os.times``), the prober thread
alone (``/proc/self/task/<tid>/stat``), and the whole machine's softirq time (``/proc/stat``),
because on loopback the kernel's work of answering the SYNs — the fleet's half — runs in the
sender's context or in softirq, which a real fleet would do on its own hosts.

    .venv/bin/python bench/probe/run.py all [--seconds 60] [--out bench/probe/out]
    .venv/bin/python bench/probe/run.py fleet|small [...]

``fleet``: every second for ``--seconds``, receive buffer sized for the fleet.
``small``: the same with ``--recv-buffer 64k`` forced, to show kernel drops and the warning.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ADDRESSES = 100
PORTS = 100
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def proc_stat_cpu() -> dict[str, float]:
    """Machine-wide CPU seconds by kind, from the first line of /proc/stat."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    names = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"]
    tick = os.sysconf("SC_CLK_TCK")
    return {n: int(v) / tick for n, v in zip(names, fields[: len(names)], strict=True)}


def thread_cpu(name: str) -> float | None:
    """CPU seconds (user + system) of this process's thread called ``name``."""
    tick = os.sysconf("SC_CLK_TCK")
    for task in Path("/proc/self/task").iterdir():
        try:
            if (task / "comm").read_text().strip() != name:
                continue
            stat = (task / "stat").read_text()
        except OSError:
            continue
        after = stat[stat.rindex(")") + 2 :].split()
        return (int(after[11]) + int(after[12])) / tick
    return None


def build_fleet(folder: Path) -> tuple[Path, dict[str, str], list[socket.socket]]:
    """Listeners and reservations, the targets file, and every target's expected state."""
    sockets: list[socket.socket] = []
    ports: list[tuple[int, str]] = []
    for i in range(PORTS):
        s = socket.socket()
        s.bind(("0.0.0.0", 0))
        if i % 2 == 0:
            s.listen(4096)
            ports.append((int(s.getsockname()[1]), "up"))
        else:
            ports.append((int(s.getsockname()[1]), "refused"))
        sockets.append(s)
    expected: dict[str, str] = {}
    lines = []
    for a in range(1, ADDRESSES + 1):
        for port, state in ports:
            key = f"127.0.0.{a}:{port}"
            expected[key] = state
            lines.append(f"{key} {state}-{a}-{port}")
    path = folder / "targets.txt"
    path.write_text("\n".join(lines) + "\n")
    return path, expected, sockets


def worker(args: argparse.Namespace) -> None:
    from lanes import probe

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    folder = tempfile.TemporaryDirectory(prefix="lanes-probe-bench-")
    path, expected, sockets = build_fleet(Path(folder.name))
    options: dict[str, Any] = {"mode": "syn", "interval": 1.0, "rounds": args.seconds}
    if args.recv_buffer:
        options["recv_buffer"] = args.recv_buffer
    machine0, times0, wall0 = proc_stat_cpu(), os.times(), time.monotonic()
    run = probe.start(path, **options)
    if run.mode != "syn":
        raise SystemExit(f"not in syn mode ({run.mode}): run as root (CAP_NET_RAW)")
    states: dict[str, str] = {}
    rounds: list[dict[str, Any]] = []
    notices: list[dict[str, str]] = []
    later_transitions = 0
    drops_total = 0
    samples: list[tuple[float, float]] = []  # (monotonic time, prober thread CPU s) per round
    while (batch := run.poll(1.0)) is not None:
        for m in batch:
            if isinstance(m, probe.Event):
                states[m.target] = m.state
                if m.previous is not None:
                    later_transitions += 1
            elif isinstance(m, probe.Notice):
                notices.append({"level": m.level, "message": m.message})
            else:
                cpu_now = thread_cpu("lanes-probe")
                if cpu_now is not None:
                    samples.append((time.monotonic(), cpu_now))
                wrong = sum(1 for k, v in states.items() if v != expected[k])
                drops_total += m.kernel_drops
                rounds.append(
                    {
                        "round": m.round,
                        "duration_ms": round(m.duration_s * 1e3, 2),
                        "sent": m.sent,
                        "replies": m.replies,
                        "timeouts": m.timeouts,
                        "unknown": m.unknown,
                        "late": m.late,
                        "strays": m.strays,
                        "kernel_packets": m.kernel_packets,
                        "kernel_drops": m.kernel_drops,
                        "kernel_drops_total": drops_total,
                        "with_state": len(states),
                        "wrong_states": wrong,
                        "pending": m.pending,
                    }
                )
    run.result()
    wall = time.monotonic() - wall0
    times1, machine1 = os.times(), proc_stat_cpu()
    # The prober thread's CPU between the first and the last round's end, per second.
    probe_thread = None
    if len(samples) >= 2:
        (t0, c0), (t1, c1) = samples[0], samples[-1]
        probe_thread = round(100 * (c1 - c0) / (t1 - t0), 1)
    cpu = (times1.user - times0.user) + (times1.system - times0.system)
    durations = sorted(r["duration_ms"] for r in rounds)
    result = {
        "scenario": args.name,
        "targets": len(expected),
        "rounds": len(rounds),
        "wall_s": round(wall, 2),
        "process_cpu_s": {
            "user": round(times1.user - times0.user, 2),
            "system": round(times1.system - times0.system, 2),
        },
        "process_cpu_percent_of_one_core": round(100 * cpu / wall, 1),
        "probe_thread_cpu_percent_of_one_core": probe_thread,
        "machine_cpu_s": {k: round(machine1[k] - machine0[k], 2) for k in machine0},
        "round_ms": {
            "p50": durations[len(durations) // 2],
            "p99": durations[min(len(durations) - 1, int(len(durations) * 0.99))],
            "max": durations[-1],
        },
        "sent": sum(r["sent"] for r in rounds),
        "replies": sum(r["replies"] for r in rounds),
        "kernel_drops": drops_total,
        "wrong_states_any_round_after_first": sum(r["wrong_states"] for r in rounds[1:]),
        "wrong_states_last_round": rounds[-1]["wrong_states"] if rounds else None,
        "transitions_after_initial": later_transitions,
        "rounds_detail": rounds,
        "notices": notices,
    }
    (out / f"{args.name}.json").write_text(json.dumps(result, indent=1) + "\n")
    for s in sockets:
        s.close()
    folder.cleanup()


def scenario(name: str, seconds: int, out: Path, recv_buffer: int | None) -> dict[str, Any]:
    command = [sys.executable, __file__, "worker", "--name", name, "--seconds", str(seconds)]
    command += ["--out", str(out)]
    if recv_buffer:
        command += ["--recv-buffer", str(recv_buffer)]
    print("$", " ".join(command), flush=True)
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    subprocess.run(command, check=True)
    result: dict[str, Any] = json.loads((out / f"{name}.json").read_text())
    result["command"] = " ".join(command)
    result["started"] = started
    (out / f"{name}.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


def meta(out: Path) -> None:
    def sh(*cmd: str) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.strip()
        except OSError:
            return ""

    cpu = [ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if "model name" in ln]
    info = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "kernel": platform.release(),
        "cpu": cpu[0].split(":", 1)[1].strip() if cpu else "",
        "cores": os.cpu_count(),
        "memory": sh("free", "-g").splitlines()[1:2],
        "rmem_max": Path("/proc/sys/net/core/rmem_max").read_text().strip(),
        "commit": sh("git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"),
        "dirty": bool(sh("git", "-C", str(ROOT), "status", "--porcelain", "crates", "python")),
        "argv": sys.argv,
    }
    (out / "meta.json").write_text(json.dumps(info, indent=1) + "\n")


def summary(r: dict[str, Any]) -> str:
    return (
        f"{r['scenario']}: {r['rounds']} rounds of {r['targets']} targets; sent {r['sent']:,}, "
        f"replies {r['replies']:,}, kernel drops {r['kernel_drops']:,}; wrong states after the "
        f"first round {r['wrong_states_any_round_after_first']}; round p50/p99/max "
        f"{r['round_ms']['p50']}/{r['round_ms']['p99']}/{r['round_ms']['max']} ms; process CPU "
        f"{r['process_cpu_percent_of_one_core']} % of a core (prober thread "
        f"{r['probe_thread_cpu_percent_of_one_core']} %)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("all", "fleet", "small", "worker"))
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--out", default=str(HERE / "out"))
    parser.add_argument("--name", default="fleet")
    parser.add_argument("--recv-buffer", type=int)
    args = parser.parse_args()
    if args.what == "worker":
        worker(args)
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    meta(out)
    if args.what in ("all", "fleet"):
        print(summary(scenario("fleet", args.seconds, out, None)))
    if args.what in ("all", "small"):
        print(summary(scenario("small", args.seconds, out, 65536)))


if __name__ == "__main__":
    main()
