"""How this host's scheduler shares one core: what the simulator's ``host.slice_ms`` is read from.

The simulator's time-sliced cores (``host.time_slicing``) are processor sharing by default: every
runnable phase progresses at once, so a woken short phase starts at once beside a long one. Linux
(EEVDF) does not share at that grain: a running thread keeps its core for a slice, and a thread
woken onto a busy core waits for that slice to end. Two measurements, each on one core (``--core``,
pinned with ``sched_setaffinity``), processes so that no interpreter lock enters:

- ``runs``: two processes spin on the core for ``--seconds``, each reading the clock in a tight
  loop; a gap of more than ``GAP_NS`` between two readings is time off the core. The run between
  two gaps is one slice as the scheduler hands it out when two threads compete.
- ``wake``: a process sleeps a random 0.5-4 ms, wakes and spins ``WORK_NS`` (a hook's work), over
  and over for ``--seconds``; its lateness is the time from the end of its sleep to its first clock
  reading. Once with the core otherwise idle, once beside a spinning process (a long batch on the
  core), and once more beside the spinner with ``LONG_WORK_NS`` of work per wake-up (a batch
  woken onto a core that runs another). The difference is what a thread woken onto a busy core
  waits for its turn.

Prints both, and ``--out`` writes them as JSON (``slices.json`` beside the lab run's files).

Run:  python bench/calibrate/slices.py [--core 1] [--seconds 3] [--out slices.json]
      (time it under the bench lock: flock /tmp/lanes-bench.lock python bench/calibrate/slices.py)
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

GAP_NS = 30_000
"""A gap between two clock readings longer than this is time off the core (the loop reads the
clock every ~0.1 µs)."""
WORK_NS = 50_000
"""The woken process's work per wake-up: about a request's hook on this host."""
LONG_WORK_NS = 5_000_000
"""The same for a long phase: about a ``line_rnn_zh`` batch of one."""


def spin(core: int, seconds: float, out: Any) -> None:
    """Spins on ``core`` for ``seconds``; sends the lengths of its uninterrupted runs, ns."""
    os.sched_setaffinity(0, {core})
    now = time.perf_counter_ns
    t0 = last = start = now()
    runs = []
    end = t0 + int(seconds * 1e9)
    while last < end:
        t = now()
        if t - last > GAP_NS:
            runs.append(last - start)
            start = t
        last = t
    out.send(runs[1:])


def wake(core: int, seconds: float, seed: int, work: int, out: Any) -> None:
    """Sleeps and wakes on ``core`` for ``seconds``, spinning ``work`` ns after each wake-up;
    sends each wake-up's lateness, ns."""
    os.sched_setaffinity(0, {core})
    rng = random.Random(seed)
    now = time.perf_counter_ns
    end = now() + int(seconds * 1e9)
    late = []
    while now() < end:
        target = now() + int(rng.uniform(0.5e6, 4e6))
        time.sleep(max(0.0, (target - now()) / 1e9))
        woke = now()
        late.append(max(0, woke - target))
        while now() - woke < work:
            pass
    out.send(late)


def run_procs(targets: list[tuple[Any, tuple[Any, ...]]]) -> list[list[int]]:
    """Starts one process per ``(function, args)``, each with a pipe as its last argument;
    returns what each sent."""
    ctx = mp.get_context("fork")
    pipes, procs = [], []
    for fn, args in targets:
        recv, send = ctx.Pipe(duplex=False)
        p = ctx.Process(target=fn, args=(*args, send))
        p.start()
        pipes.append(recv)
        procs.append(p)
    got = [pipe.recv() for pipe in pipes]
    for p in procs:
        p.join()
    return got


def quantiles_ms(xs: list[int]) -> dict[str, float]:
    """Count, mean and quantiles of ``xs`` (ns) in ms."""
    xs = sorted(xs)

    def q(p: float) -> float:
        return round(xs[min(len(xs) - 1, int(p * len(xs)))] / 1e6, 4)

    return {
        "n": len(xs),
        "mean_ms": round(statistics.fmean(xs) / 1e6, 4),
        "p50_ms": q(0.50),
        "p90_ms": q(0.90),
        "p99_ms": q(0.99),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--core", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    c, s = args.core, args.seconds
    a, b = run_procs([(spin, (c, s)), (spin, (c, s))])
    idle = run_procs([(wake, (c, s, 1, WORK_NS))])[0]
    busy, _ = run_procs([(wake, (c, s, 2, WORK_NS)), (spin, (c, s + 0.2))])
    long, _ = run_procs([(wake, (c, s, 3, LONG_WORK_NS)), (spin, (c, s + 0.2))])
    out = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "loadavg": os.getloadavg(),
        "core": c,
        "runs": quantiles_ms(a + b),
        "wake_idle": quantiles_ms(idle),
        "wake_busy": quantiles_ms(busy),
        "wake_busy_long": quantiles_ms(long),
    }
    out["wake_extra_mean_ms"] = round(out["wake_busy"]["mean_ms"] - out["wake_idle"]["mean_ms"], 4)
    print(json.dumps(out, indent=1))
    if args.out:
        args.out.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
