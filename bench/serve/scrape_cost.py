"""Does scraping ``/metrics`` slow serving? An interleaved A/B on one ``lanes serve``.

Method: one ``lanes serve`` (the demo zoo on ``--devices cpu``, metrics on); ``lanes bench``
drives ``char_cnn`` open loop (Poisson, ``--rate``) for ``--seconds`` per run, alternately with
no scraper ("off") and with a thread scraping ``/metrics`` every ``--every`` seconds ("on"),
``--repeats`` pairs. Reported: p50 and p99 per run, the median of the per-pair ratios on/off,
and the scrape's own duration. Prometheus scrapes every 15 s by default; the default here,
100 ms, is 150 times harsher.

    .venv/bin/python bench/serve/scrape_cost.py [--rate 150] [--seconds 10] [--repeats 4]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

BIN = Path(sys.executable).parent


def start_server() -> tuple[subprocess.Popen[str], str, int]:
    cmd = [
        str(BIN / "lanes"), "serve", "--devices", "cpu", "--port", "0",
        "--metrics-port", "0", "--warmup-batches", "2",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith("lanes serve: http://"):
            url = line.split()[2]
            match = re.search(r"metrics :(\d+)", line)
            assert match, line
            threading.Thread(target=proc.stderr.read, daemon=True).start()  # keep draining
            return proc, url, int(match.group(1))
    raise SystemExit(f"lanes serve exited {proc.wait()}")


def scraper(port: int, every: float, stop: threading.Event, took: list[float]) -> None:
    while not stop.is_set():
        t0 = time.perf_counter()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            r.read()
        took.append(time.perf_counter() - t0)
        stop.wait(every)


def bench(url: str, corpus: Path, rate: float, seconds: float, out: Path) -> dict[str, float]:
    cmd = [
        str(BIN / "lanes"), "bench", f"{url}/v2/models/char_cnn/infer", "--corpus", str(corpus),
        "-R", str(rate), "--arrival", "poisson", "-d", f"{seconds}s", "-c", "32", "-t", "1",
        "--json", str(out),
    ]  # fmt: skip
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    doc = json.loads(out.read_text())
    return {"p50": doc["latency_ms"]["p50"], "p99": doc["latency_ms"]["p99"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=float, default=150.0)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--every", type=float, default=0.1)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="lanes-scrape-"))
    subprocess.run([str(BIN / "lanes"), "zoo", "images", str(tmp / "img")], check=True)
    corpus = tmp / "char.jsonl"
    subprocess.run(
        [str(BIN / "lanes"), "bench", "corpus", "--kserve", "char_cnn", "--input-name", "image",
         "--images", str(tmp / "img" / "char"), "-o", str(corpus)],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    proc, url, port = start_server()
    rows: list[dict[str, float]] = []
    took: list[float] = []
    try:
        for i in range(args.repeats):
            pair = {}
            for mode in ("off", "on") if i % 2 == 0 else ("on", "off"):
                stop = threading.Event()
                t = threading.Thread(target=scraper, args=(port, args.every, stop, took))
                if mode == "on":
                    t.start()
                r = bench(url, corpus, args.rate, args.seconds, tmp / f"{mode}{i}.json")
                stop.set()
                if mode == "on":
                    t.join()
                pair[mode] = r
                print(f"pair {i + 1} {mode:3}: p50 {r['p50']:.2f} ms  p99 {r['p99']:.2f} ms")
            rows.append(
                {
                    "p50_ratio": pair["on"]["p50"] / pair["off"]["p50"],
                    "p99_ratio": pair["on"]["p99"] / pair["off"]["p99"],
                }
            )
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    p50 = statistics.median(r["p50_ratio"] for r in rows)
    p99 = statistics.median(r["p99_ratio"] for r in rows)
    print(f"median on/off ratio: p50 {p50:.3f}, p99 {p99:.3f} over {len(rows)} pairs")
    print(
        f"scrapes: {len(took)}, duration p50 {statistics.median(took) * 1000:.1f} ms, "
        f"max {max(took) * 1000:.1f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
