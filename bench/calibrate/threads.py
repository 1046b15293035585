"""Where a live ``lanes serve``'s CPU goes, per thread: the calibration mix on ``--devices cpu:2
--cpu-threads 1 --policy fifo`` at one rate, each thread's CPU time and run delay (time runnable
but waiting for a core; ``/proc/PID/task/TID/schedstat``) over a 5 s window, summed per thread
name (``lanes-device-N``: a device executor; ``lanes-serve-io``: the I/O threads, which also run
the hooks). One ``lanes bench`` process per model of the mix (Poisson, the lab's corpus), 2 s of
warm-up first. docs/results/calibration.md reads it against the device timelines: a device
thread's CPU plus its run delay is the wall time of its runtime calls.

Run:  python bench/calibrate/threads.py CORPUS_DIR [RATE]   (CORPUS_DIR: a lab run's corpus/)
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import time
from pathlib import Path

from lone import wait_ready  # beside this script, whose folder Python puts on sys.path

PORT = 18733
MIX = {"char_cnn": 0.60, "line_rnn_zh": 0.25, "line_rnn_en": 0.15}


def snapshot(pid: int) -> dict[int, tuple[str, int, int, int]]:
    """``{tid: (name, cpu_ns, run_delay_ns, times_run)}`` of every thread of ``pid`` (its
    ``schedstat``); a thread gone meanwhile is left out."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            name = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
            cpu, delay, runs = map(
                int, Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()
            )
        except (OSError, ValueError):
            continue
        out[int(tid)] = (name, cpu, delay, runs)
    return out


def main() -> int:
    corpus, rate = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 600.0
    serve = [sys.executable, "-m", "lanes", "serve", "--demo", "--devices", "cpu:2"]
    serve += ["--cpu-threads", "1", "--policy", "fifo", "--port", str(PORT)]
    serve += ["--metrics-port", "off"]
    server = subprocess.Popen(serve, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(PORT)

        def load(seconds: int) -> list[subprocess.Popen[bytes]]:
            return [
                subprocess.Popen(
                    [
                        *(sys.executable, "-m", "lanes", "bench"),
                        f"http://127.0.0.1:{PORT}/v2/models/{m}/infer",
                        *("--corpus", f"{corpus}/{m}.jsonl", "-R", str(rate * w)),
                        *("--arrival", "poisson", "-c", "32", "-d", f"{seconds}s", "-q"),
                    ]
                )
                for m, w in MIX.items()
            ]

        for p in load(2):
            p.wait()
        gens = load(6)
        time.sleep(0.5)
        before, t0 = snapshot(server.pid), time.monotonic()
        time.sleep(5)
        after, t1 = snapshot(server.pid), time.monotonic()
        for p in gens:
            p.wait()
    finally:
        server.terminate()
        server.wait(timeout=30)
    wall = t1 - t0
    per: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
    for tid, (name, cpu, delay, _) in after.items():
        if tid in before:
            g = per[name]
            g[0] += 1
            g[1] += cpu - before[tid][1]
            g[2] += delay - before[tid][2]
    print(f"# {rate:g} req/s, window {wall:.2f} s, load {os.getloadavg()[0]:.2f}")
    print("| threads | count | CPU, cores | run delay, cores |")
    print("|---|---:|---:|---:|")
    for name, (n, cpu, delay) in sorted(per.items(), key=lambda kv: -kv[1][1]):
        if cpu > 1_000_000:
            print(f"| {name} | {n} | {cpu / 1e9 / wall:.3f} | {delay / 1e9 / wall:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
