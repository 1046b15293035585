#!/usr/bin/env python3
"""Where a lone request's latency goes on this host: the loopback HTTP floor against lanes.

    .venv/bin/python bench/serve/peers/latency_floor.py [--repeats 3] [--seconds 10]
        [--rate 100] [--out DIR]

Issue 14 asks for an added latency of at most 300 µs p50 at 100 req/s over the bare model.
"Added" includes what any server on this host pays for a request from a client on the same
host: the client's send and receive, the kernel's loopback, and the wake-ups of idle threads.
This measures that floor and the steps above it, with the same client (``lanes bench``, open
loop, Poisson, one sender thread) at ``--rate`` for ``--seconds``, interleaved over repeats:

- ``nginx``: a throwaway nginx (one worker; bench/load/kit.py) answering ``GET /empty``: an
  HTTP server in C with one thread, no hop;
- ``lanes-live``: ``lanes serve``'s ``GET /v2/health/live``: its HTTP front end alone (the
  I/O thread parses and answers; no driver, no executor);
- ``lanes-infer``: ``POST /v2/models/identity/infer`` with the race's JSON body: the whole
  path (decode, the driver task, encode; the 5 µs batch runs on the driver's thread under
  its inline rule);
- ``lanes-noinline``: the same against a second ``lanes serve`` with ``--inline-max-us 0``:
  every batch handed to the device's executor thread and answered back through the driver
  (two more wake-ups of sleeping threads).

Before each repeat, the bare model (``identity`` in process, ONNX Runtime through lanes-onnx,
crates/lanes-onnx/examples/cadence.rs) is timed back to back and at ``--rate``: on this VM a
call after a 10 ms gap finds its caches cold and takes ~100 µs where a back-to-back one takes
~3 µs, so the server's *added* latency is its latency minus the bare model's at the same
cadence (both baselines are written).

Writes every run to ``--out``/latency-floor.json and prints p50 / p99 medians (min-max).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE.parents[1] / "load"))  # kit; run.py must stay this folder's

import kit  # noqa: E402
import run  # noqa: E402

MODEL = "identity"


def lone(url: str, body: Path | None, args: argparse.Namespace) -> dict[str, Any]:
    out = args.out / "runs" / "floor.json"
    post = ["--body-file", str(body), "-H", "Content-Type: application/json"] if body else []
    cmd = [
        str(run.LANES_VENV / "bin" / "lanes"), "bench", url, *post, "-R", f"{args.rate:g}",
        "-d", f"{args.seconds:g}s", "-t", "1", "-c", "16", "-q", "--json", str(out),
    ]  # fmt: skip
    subprocess.run(cmd, check=True)
    result = json.loads(out.read_text())
    return {
        "command": shlex.join(cmd),
        "requests": result["requests"],
        "errors": sum(result["errors"].values()),
        "latency_ms": result["latency_ms"],
        "service_time_ms": result["service_time_ms"],
    }


CADENCE_BIN = run.NATIVE_BIN.parent / "cadence"


def bare(model_file: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The bare model back to back and at ``--rate`` (cadence.rs's JSON line)."""
    cmd = [str(CADENCE_BIN), str(model_file), f"{args.rate:g}", "300"]
    env = {**os.environ, "ORT_DYLIB_PATH": run.ort_library()}
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return {"command": shlex.join(cmd), **json.loads(out)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--rate", type=float, default=run.OVERHEAD_RATE)
    p.add_argument("--out", type=Path, default=HERE / "out-floor")
    args = p.parse_args()
    (args.out / "runs").mkdir(parents=True, exist_ok=True)
    (args.out / "logs").mkdir(exist_ok=True)
    kit.ensure_tools(("nginx",))
    cadence = ["-p", "lanes-onnx", "--example", "cadence"]
    subprocess.run(["cargo", "build", "--release", "--quiet", *cadence], check=True)
    repo = run.repository(args.out, MODEL)
    body = run.body_file(args.out, MODEL)
    lanes = f"http://127.0.0.1:{run.PORTS['lanes']}"
    runs: list[dict[str, Any]] = []
    with (
        kit.Nginx() as web,
        run.running("lanes", repo, MODEL, body, args.out / "logs" / "lanes.log"),
        run.running("lanes-noinline", repo, MODEL, body, args.out / "logs" / "noinline.log"),
    ):
        targets: dict[str, tuple[str, Path | None]] = {
            "nginx": (web.url + "/empty", None),
            "lanes-live": (f"{lanes}/v2/health/live", None),
            "lanes-infer": (run.infer_url("lanes", MODEL), body),
            "lanes-noinline": (run.infer_url("lanes-noinline", MODEL), body),
        }
        names = list(targets)
        for repeat in range(args.repeats):
            b = bare(repo / MODEL / "model.onnx", args)
            runs.append({"repeat": repeat, "target": "bare", **b})
            run.log(
                f"  {repeat} bare         p50 {b['at_rate']['wall_p50_us']:.0f} µs at "
                f"{args.rate:g}/s, {b['back_to_back']['wall_p50_us']:.0f} µs back to back"
            )
            order = names[repeat % len(names) :] + names[: repeat % len(names)]
            for name in order:
                url, payload = targets[name]
                r = {"repeat": repeat, "target": name, **lone(url, payload, args)}
                runs.append(r)
                lat = r["latency_ms"]
                run.log(f"  {repeat} {name:12} p50 {lat['p50']:.3f} ms  p99 {lat['p99']:.3f} ms")
                (args.out / "latency-floor.json").write_text(json.dumps(runs, indent=1) + "\n")
    for key in ("at_rate", "back_to_back"):
        cells = []
        for q in ("p50", "p99"):
            values = [r[key][f"wall_{q}_us"] for r in runs if r["target"] == "bare"]
            cells.append(
                f"{q} {statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f}) µs"
            )
        print(f"{'bare ' + key:12} " + ", ".join(cells))
    for name in names:
        mine = [r for r in runs if r["target"] == name]
        cells = []
        for q in ("p50", "p99"):
            values = [r["latency_ms"][q] * 1000 for r in mine]
            cells.append(
                f"{q} {statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f}) µs"
            )
        print(f"{name:12} " + ", ".join(cells))


if __name__ == "__main__":
    main()
