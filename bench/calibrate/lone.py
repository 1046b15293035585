"""A lone request's latency on ``lanes serve``, open loop: what the simulator's thread wake-ups
(``host.handoff_ms``) are read from.

The lab takes an *unloaded* latency at each server start — sequential requests, each sent as the
previous reply arrives. That path is hot: the client polls for the reply (crates/lanes-load
``spin``), the server's threads have just run. Open-loop traffic at a light rate is not: between
two requests every thread of the path (the client's sender, the server's I/O thread, the hook
pool, the driver, the device thread) has gone to sleep and each hop wakes one — on this VM an
inter-processor interrupt and a hypervisor exit each. Measured on char_cnn alone (2026-11-26):
p50 0.66 ms closed loop, 1.37 ms open loop at 120 req/s with the device 10 % busy, send delay
0.09 ms.

This script serves the demo zoo as the calibration lab does (``lanes serve --demo --devices cpu:2
--cpu-threads 1 --policy fifo``) and sends each model alone, Poisson at a rate that keeps its
device about 5 % busy, with the lab's corpus: ``repeats`` rounds, the models in a shuffled order
each round. Reports per model the p50 latency (median over repeats, and the range), the p50 send
delay, and the closed-loop (c = 1) p50 for comparison. ``compare.py --lone FILE`` reads it.

Run:  python bench/calibrate/lone.py CORPUS_DIR [--repeats 3] [--out lone.json]
      (CORPUS_DIR: a lab run's ``corpus/`` folder, ``MODEL.jsonl`` per model)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

RATES = {"char_cnn": 80.0, "line_rnn_zh": 10.0, "line_rnn_en": 25.0}
"""Requests/s per model alone: about 5 % of one device (1 / the in-situ batch-of-one cost)."""
PORT = 18711
SECONDS = 4


def bench(model: str, corpus: Path, out: Path, rate: float | None, seed: int) -> dict[str, float]:
    """One ``lanes bench`` run of ``model``: open loop at ``rate``, or closed loop c = 1."""
    url = f"http://127.0.0.1:{PORT}/v2/models/{model}/infer"
    load = ["-R", str(rate), "--arrival", "poisson", "-c", "16"] if rate else ["-c", "1"]
    cmd = [sys.executable, "-m", "lanes", "bench", url, "--corpus", str(corpus / f"{model}.jsonl")]
    cmd += [*load, "-d", f"{SECONDS}s", "--seed", str(seed), "-q", "--json", str(out)]
    subprocess.run(cmd, check=True, timeout=60)
    d = json.loads(out.read_text())
    return {
        "p50_ms": d["latency_ms"]["p50"],
        "p99_ms": d["latency_ms"]["p99"],
        "send_delay_p50_ms": d.get("send_delay_ms", {}).get("p50", 0.0),
    }


def wait_ready(port: int) -> None:
    """Polls the server's readiness on ``port`` every 0.5 s, for up to 120 tries."""
    for _ in range(120):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/health/ready", timeout=1)
            return
        except OSError:
            time.sleep(0.5)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("lone.json"))
    args = ap.parse_args(argv)
    serve = [sys.executable, "-m", "lanes", "serve", "--demo", "--devices", "cpu:2"]
    serve += ["--cpu-threads", "1", "--policy", "fifo", "--port", str(PORT)]
    serve += ["--metrics-port", "off"]
    doc: dict[str, object] = {
        "command": " ".join([sys.executable, *sys.argv]),
        "server": " ".join(serve),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_before": [round(x, 2) for x in os.getloadavg()],
        "rates": RATES,
        "seconds": SECONDS,
    }
    server = subprocess.Popen(serve, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rounds: dict[str, list[dict[str, float]]] = {m: [] for m in RATES}
    closed: dict[str, list[float]] = {m: [] for m in RATES}
    try:
        wait_ready(PORT)
        rng = random.Random(1)
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "r.json"
            for k in range(args.repeats):
                order = list(RATES)
                rng.shuffle(order)
                for model in order:
                    rounds[model].append(bench(model, args.corpus, out, RATES[model], k + 1))
                    closed[model].append(bench(model, args.corpus, out, None, k + 1)["p50_ms"])
    finally:
        server.terminate()
        server.wait(timeout=30)
    doc["load_after"] = [round(x, 2) for x in os.getloadavg()]
    doc["models"] = {
        m: {
            "p50_ms": statistics.median(r["p50_ms"] for r in rs),
            "p50_range_ms": [min(r["p50_ms"] for r in rs), max(r["p50_ms"] for r in rs)],
            "p99_ms": statistics.median(r["p99_ms"] for r in rs),
            "send_delay_p50_ms": statistics.median(r["send_delay_p50_ms"] for r in rs),
            "closed_p50_ms": statistics.median(closed[m]),
            "repeats": rs,
        }
        for m, rs in rounds.items()
    }
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    for m, r in doc["models"].items():  # type: ignore[union-attr]
        print(
            f"{m}: open p50 {r['p50_ms']:.3f} ms {r['p50_range_ms']}, closed p50 "
            f"{r['closed_p50_ms']:.3f}, send delay p50 {r['send_delay_p50_ms']:.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
