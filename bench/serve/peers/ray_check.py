"""Ray Serve by hand, to see where its low race figure comes from.

    flock /tmp/lanes-bench.lock .venv/bin/python bench/serve/peers/ray_check.py [--out DIR]

The race harness starts Ray Serve on ``char_cnn_top1`` exactly as the race does
(:func:`run.running`); then one Python process sends 100 sequential requests and two
closed-loop rounds of 200 (4 and 16 clients), and ``ps`` lists the busiest processes while
Ray is up. ``--out`` is a race output folder holding ``repos/`` and ``bodies/`` (written by
``run.py race``).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run

MODEL = "char_cnn_top1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out-2026-11-26")
    args = parser.parse_args()
    body = args.out / "bodies" / f"{MODEL}.json"
    url, payload = run.infer_url("ray", MODEL), body.read_bytes()

    def one() -> float:
        """One request's latency, ms."""
        started = time.perf_counter()
        headers = {"Content-Type": "application/json"}
        request = urllib.request.Request(url, data=payload, headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=10) as reply:
            reply.read()
        return (time.perf_counter() - started) * 1e3

    with run.running("ray", args.out / "repos" / MODEL, MODEL, body, Path("/tmp/ray.log")):
        lone = sorted(one() for _ in range(100))
        print(f"sequential: p50 {statistics.median(lone):.1f} ms, p90 {lone[89]:.1f} ms")
        for clients in (4, 16):
            with ThreadPoolExecutor(clients) as pool:
                started = time.perf_counter()
                times = list(pool.map(lambda _: one(), range(200)))
                elapsed = time.perf_counter() - started
            p50 = statistics.median(times)
            print(f"closed loop x{clients}: {200 / elapsed:.0f} req/s, p50 {p50:.1f} ms")
        ps = ["ps", "-eo", "pcpu,rss,comm", "--sort=-pcpu"]
        print("\n".join(subprocess.run(ps, capture_output=True, text=True).stdout.split("\n")[:12]))


if __name__ == "__main__":
    main()
