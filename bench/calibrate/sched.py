"""How Linux shares this host's cores among a live ``lanes serve``'s threads and the load
generator, per thread and per wake-up.

The calibration mix on ``--devices cpu:2 --cpu-threads 1`` at each rate, as threads.py sends it
(one ``lanes bench`` process per model, Poisson, the lab's corpus, 2 s of warm-up), then two
windows of the same load:

1. ``/proc/PID/task/TID/schedstat`` of every server thread and every load-generator thread
   before and after 5 s: CPU time (1st field), run delay — time runnable but waiting for a core
   (2nd) — and times run (3rd); host CPU from ``/proc/stat``.
2. ``perf sched record`` for 3 s, read back with ``perf sched timehist --state``: every time a
   thread got a core, how long it had waited for it (``sch delay``: since its wake-up, or since
   it was preempted) and how long it then ran. Their quantiles per thread kind
   (``lanes-device``: a device executor; ``lanes-serve-io``: the I/O threads, which also run the
   hooks; ``lanes-load``: the client's senders), split by why the thread was waiting (woken from
   sleep, or preempted while runnable), and how often a device thread lost its core mid-call.

Also each model's client-side p50/p99 over the whole load (``lanes bench --json``).

Run:  python bench/calibrate/sched.py CORPUS_DIR [--policy fifo] [--rates 200,600] [--out F]
      (CORPUS_DIR: a lab run's corpus/; perf must be allowed to record sched tracepoints)
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lone import wait_ready  # beside this script, whose folder Python puts on sys.path
from threads import MIX, snapshot

PORT = 18741
WARM_S, LOAD_S, STAT_S, PERF_S = 2, 13, 5, 3
QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999)
ROW = re.compile(
    r"^\s*(?P<t>[\d.]+)\s+\[(?P<cpu>\d+)\]\s+(?P<name>.+?)(?:\[(?P<tid>\d+)(?:/(?P<pid>\d+))?\])?"
    r"\s+(?P<wait>[\d.]+)\s+(?P<delay>[\d.]+)\s+(?P<run>[\d.]+)\s+(?P<state>\S+)"
)


def kind(name: str) -> str:
    """A thread's kind: its name without trailing digits and dots (``lanes-device-1.`` -> ...)."""
    return re.sub(r"[-_]?[\d.]+$", "", name) or name


def host_busy() -> tuple[int, int]:
    """(busy, total) jiffies of the host from ``/proc/stat``."""
    f = list(map(int, Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]))
    return sum(f) - f[3] - f[4], sum(f)


def schedstat_window(server: int, gens: list[int]) -> dict[str, object]:
    """Per thread kind of the server, and the load generators together: CPU, run delay (cores)
    and the run delay per ms of CPU, over ``STAT_S``."""
    pids = {"server": [server], "client": gens}
    before = {who: {p: snapshot(p) for p in ps} for who, ps in pids.items()}
    h0, t0 = host_busy(), time.monotonic()
    time.sleep(STAT_S)
    after = {who: {p: snapshot(p) for p in ps} for who, ps in pids.items()}
    h1, wall = host_busy(), time.monotonic() - t0
    out: dict[str, object] = {"window_s": round(wall, 3)}
    out["host_busy_cores"] = round((h1[0] - h0[0]) / (h1[1] - h0[1]) * os.cpu_count(), 3)  # type: ignore[operator]
    for who in pids:
        per: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0, 0])
        for pid, now in after[who].items():
            for tid, (name, cpu, delay, runs) in now.items():
                old = before[who][pid].get(tid)
                if old is None:
                    continue
                g = per[kind(name) if who == "server" else "client"]
                g[0] += 1
                g[1] += cpu - old[1]
                g[2] += delay - old[2]
                g[3] += runs - old[3]
        out[who] = {
            k: {
                "threads": n,
                "cpu_cores": round(cpu / 1e9 / wall, 4),
                "run_delay_cores": round(delay / 1e9 / wall, 4),
                "delay_per_cpu_ms": round(delay / cpu, 3) if cpu else None,
                "runs_per_s": round(runs / wall, 1),
                "delay_per_run_ms": round(delay / 1e6 / runs, 4) if runs else None,
            }
            for k, (n, cpu, delay, runs) in per.items()
            if cpu > 1_000_000
        }
    return out


def quantiles(xs: list[float]) -> dict[str, float]:
    """Count, mean and ``QUANTILES`` of ``xs`` (nearest rank), ms."""
    if not xs:
        return {"n": 0}
    s = sorted(xs)
    out = {"n": len(s), "mean": round(sum(s) / len(s), 4)}
    for q in QUANTILES:
        out[f"p{q * 100:g}"] = round(s[min(len(s) - 1, int(q * len(s)))], 4)
    out["max"] = round(s[-1], 4)
    return out


def perf_window(server: int, gens: list[int], data: Path) -> dict[str, object]:
    """``perf sched record`` over ``PERF_S``; per thread kind, quantiles of the wait for a core
    each time a thread got one, by why it waited, and of its runs."""
    subprocess.run(
        ["perf", "sched", "record", "-q", "-o", str(data), "--", "sleep", str(PERF_S)],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60,
    )  # fmt: skip
    text = subprocess.run(
        ["perf", "sched", "timehist", "--state", "-i", str(data)],
        check=True, capture_output=True, text=True, timeout=300,
    ).stdout  # fmt: skip
    who = {server: "", **{g: "client" for g in gens}}
    woken: dict[str, list[float]] = collections.defaultdict(list)
    preempted: dict[str, list[float]] = collections.defaultdict(list)
    onto_idle: dict[str, list[float]] = collections.defaultdict(list)
    onto_busy: dict[str, list[float]] = collections.defaultdict(list)
    behind: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    runs: dict[str, list[float]] = collections.defaultdict(list)
    lost: collections.Counter[str] = collections.Counter()
    waiting = {}  # tid -> True when the thread was preempted (still runnable) at its last switch
    last_on: dict[str, str] = {}  # cpu -> the kind of the task that last left it
    for line in text.splitlines():
        m = ROW.match(line)
        if m is None:
            continue
        # A process's main thread shows as ``name[tid]``: its pid is its tid.
        pid = int(m["pid"] or m["tid"] or -1)
        if m["name"].strip() == "<idle>":
            here = "idle"
        elif pid in who:
            here = who[pid] or kind(m["name"])
        else:
            here = "other"
        before, last_on[m["cpu"]] = last_on.get(m["cpu"]), here
        if pid not in who:
            continue
        k, tid = here, int(m["tid"])
        # A row is one stretch on a core ending at a switch. Woken from sleep, its wait for the
        # core is ``sch delay``; preempted at its last switch, timehist puts it in ``wait time``.
        # The task that left this core as it got it: ``idle`` if the core was idle.
        if waiting.get(tid):
            preempted[k].append(float(m["wait"]) + float(m["delay"]))
        else:
            delay = float(m["delay"])
            woken[k].append(delay)
            if before is not None:
                (onto_idle if before == "idle" else onto_busy)[k].append(delay)
                behind[k][before] += 1
        runs[k].append(float(m["run"]))
        waiting[tid] = m["state"] == "R"
        lost[k] += m["state"] == "R"
    return {
        k: {
            "woken_wait_ms": quantiles(woken[k]),
            "woken_onto_idle_core_ms": quantiles(onto_idle[k]),
            "woken_onto_busy_core_ms": quantiles(onto_busy[k]),
            "woken_behind": dict(behind[k].most_common()),
            "preempted_wait_ms": quantiles(preempted[k]),
            "run_ms": quantiles(runs[k]),
            "preempted_share": round(lost[k] / len(runs[k]), 4),
            "per_s": round(len(runs[k]) / PERF_S, 1),
        }
        for k in sorted(runs)
    }


def one_rate(corpus: str, policy: str, rate: float, tmp: Path) -> dict[str, object]:
    """The server at ``rate``: both windows and the client's latencies."""
    serve = [sys.executable, "-m", "lanes", "serve", "--demo", "--devices", "cpu:2"]
    serve += ["--cpu-threads", "1", "--policy", policy, "--port", str(PORT)]
    serve += ["--metrics-port", "off", "--grpc-port", "off"]
    server = subprocess.Popen(serve, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(PORT)

        def load(seconds: int, json_dir: Path | None) -> list[subprocess.Popen[bytes]]:
            procs = []
            for m, w in MIX.items():
                cmd = [sys.executable, "-m", "lanes", "bench"]
                cmd += [f"http://127.0.0.1:{PORT}/v2/models/{m}/infer"]
                cmd += ["--corpus", f"{corpus}/{m}.jsonl", "-R", str(rate * w)]
                cmd += ["--arrival", "poisson", "-c", "32", "-d", f"{seconds}s", "-q"]
                if json_dir is not None:
                    cmd += ["--json", str(json_dir / f"{m}.json")]
                procs.append(subprocess.Popen(cmd))
            return procs

        for p in load(WARM_S, None):
            p.wait()
        gens = load(LOAD_S, tmp)
        time.sleep(1.5)  # the generators' interpreters start and their pacing settles
        load_before = os.getloadavg()[0]
        stat = schedstat_window(server.pid, [g.pid for g in gens])
        perf = perf_window(server.pid, [g.pid for g in gens], tmp / "perf.data")
        for p in gens:
            p.wait()
    finally:
        server.terminate()
        server.wait(timeout=30)
    latency = {}
    for m in MIX:
        d = json.loads((tmp / f"{m}.json").read_text())
        latency[m] = {"p50_ms": d["latency_ms"]["p50"], "p99_ms": d["latency_ms"]["p99"]}
    return {"rate": rate, "policy": policy, "loadavg_before": load_before, "schedstat": stat,
            "perf_s": PERF_S, "perf": perf, "latency": latency}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus")
    ap.add_argument("--policy", default="fifo")
    ap.add_argument("--rates", default="200,600")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    results = []
    for rate in map(float, a.rates.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            r = one_rate(a.corpus, a.policy, rate, Path(tmp))
        results.append(r)
        print(json.dumps(r, indent=1), flush=True)
    if a.out:
        a.out.write_text(json.dumps({"started": started, "runs": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
