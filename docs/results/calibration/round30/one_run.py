"""One lab run taken apart request by request: the thirtieth round's look at a run whose short
model's p99 ran long, on a grid kept with its request traces (round 29's, in /tmp/r29).

Prints the model's server-side time (the request span's ``total_ms``) p50, p99 and max, then each
of its requests slower than ``--over`` ms inside the server with its parts (the request span's
``pre_wait``, ``batch_wait``: the wait for the model's previous batch, ``scheduled``: from
entering the scheduler to its batch's end, ``run``: its batch's call, ``post_wait``,
``total``), ms from the run's first request; then every batch on the devices from ``--from`` to
``--to`` ms: its device, model, size, call, CPU and its oldest request's wait for a device.

Run:  python docs/results/calibration/round30/one_run.py TRACE.json [--model char_cnn]
      [--over 30] [--from 1600] [--to 1700]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

PARTS = ("pre_wait_ms", "batch_wait_ms", "scheduled_ms", "run_ms", "post_wait_ms", "total_ms")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--model", default="char_cnn")
    ap.add_argument("--over", type=float, default=30.0)
    ap.add_argument("--from", dest="lo", type=float, default=0.0)
    ap.add_argument("--to", dest="hi", type=float, default=0.0)
    args = ap.parse_args(argv)
    events = json.loads(args.trace.read_text())["traceEvents"]
    reqs = [e for e in events if e.get("cat") == "request" and e.get("ph") == "b" and "args" in e]
    t0 = min(e["ts"] for e in reqs)
    mine = sorted((e for e in reqs if e["name"] == args.model), key=lambda e: e["ts"])
    totals = sorted(e["args"]["total_ms"] for e in mine)
    p99 = totals[int(len(totals) * 0.99)]
    print(f"{args.model}: {len(totals)} requests inside the server, p50 "
          f"{statistics.median(totals):.1f}, p99 {p99:.1f}, max {totals[-1]:.1f} ms")  # fmt: skip
    print()
    print("| at ms | " + " | ".join(p.removesuffix("_ms") for p in PARTS) + " |")
    print("|---:|" + "---:|" * len(PARTS))
    for e in mine:
        if e["args"]["total_ms"] > args.over:
            cells = " | ".join(f"{e['args'].get(p, 0.0):.1f}" for p in PARTS)
            print(f"| {(e['ts'] - t0) / 1e3:.1f} | {cells} |")
    if args.hi > args.lo:
        print()
        print("| from ms | to ms | device | model | size | call ms | CPU ms | oldest's wait ms |")
        print("|---:|---:|---:|---|---:|---:|---:|---:|")
        for j in sorted((e for e in events if e.get("ph") == "X"), key=lambda j: j["ts"]):
            start = (j["ts"] - t0) / 1e3
            if args.lo <= start <= args.hi:
                a = j["args"]
                print(
                    f"| {start:.1f} | {start + j['dur'] / 1e3:.1f} | {j['tid']} | {a['model']} | "
                    f"{a['batch_size']} | {a['measured_ms']:.1f} | {a.get('cpu_ms', 0):.1f} | "
                    f"{a['queue_wait_ms']:.1f} |"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
