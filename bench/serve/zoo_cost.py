"""Per-item CPU cost of the demo zoo's models (ONNX Runtime, 1 intra-op thread).

Checks the zoo's sizing rule (issue 4): on CPU the line RNNs cost roughly 5-20x the character
CNN per item. Models are timed interleaved (round-robin, one batch each per round) so machine
noise hits all of them alike; reports the median per-item time over the rounds and the ratio to
char_cnn. Usage: python bench/serve/zoo_cost.py [--batch 8] [--rounds 41]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as np

from lanes.models.base import Device
from lanes.models.zoo import ZOO_NAMES, zoo_models


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=41)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    replicas = {m.name: m.replica(Device("cpu", 0, 1)) for m in zoo_models()}
    batches = {}
    for name, r in replicas.items():
        raw = (rng.random((args.batch, 32, 256 if "line" in name else 32)) * 255).astype(np.uint8)
        batches[name] = r.preprocess({"image": raw})
        r.predict(batches[name])  # warm-up
    times: dict[str, list[float]] = {n: [] for n in ZOO_NAMES}
    for _ in range(args.rounds):
        for name in ZOO_NAMES:
            t0 = time.perf_counter()
            replicas[name].predict(batches[name])
            times[name].append((time.perf_counter() - t0) * 1000 / args.batch)
    base = statistics.median(times["char_cnn"])
    print(
        f"# {platform.processor() or platform.machine()}, batch {args.batch}, "
        f"{args.rounds} interleaved rounds, 1 intra-op thread"
    )
    print("| model | per item (ms, median) | x char_cnn |")
    print("|---|---|---|")
    for name in ZOO_NAMES:
        med = statistics.median(times[name])
        print(f"| {name} | {med:.3f} | {med / base:.1f} |")


if __name__ == "__main__":
    main()
