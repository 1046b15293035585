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

Two clocks (docs/bench.md): ``latency`` runs from the slot's *intended* send time, so it also
holds the client's own lateness (``send_delay``: the sender thread's timer wake-up, ~0.1 ms on
this VM for every target, nginx's included); ``service`` runs from the request's actual send.
The *added* latency is given both ways, paired per repeat (the target's p50 or p99 less the
bare model's at the same cadence).

``--oha`` also runs oha (from its package; a client nobody here wrote) at the same rate on
``nginx``, ``lanes-live`` and ``lanes-infer``, without ``--latency-correction``, so from each
request's actual send like ``service``: the cross-check of the ``lanes bench`` figures.

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
import protocols  # noqa: E402
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
        "send_delay_ms": result["send_delay_ms"],
    }


OHA_TARGETS = ("nginx", "lanes-live", "lanes-infer")


def oha(url: str, body: Path | None, args: argparse.Namespace) -> dict[str, Any]:
    """oha at ``--rate`` for ``--seconds`` on 16 connections, timed from each actual send."""
    fixed = ["-q", f"{args.rate:g}", "--wait-ongoing-requests-after-deadline"]
    if body is None:
        head = [str(run.OHA), "-z", f"{args.seconds:g}s", "-c", "16", *fixed]
        cmd = [*head, "--no-tui", "--output-format", "json", url]
    else:
        cmd = protocols.oha_post(run.OHA, url, body, args.seconds, 16, *fixed)
    report = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    result = protocols.read_oha(report)
    return {"command": shlex.join(cmd), **result, "service_time_ms": result["latency_ms"]}


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f})"


def added(runs: list[dict[str, Any]], target: str, clock: str, q: str) -> list[float]:
    """``target``'s ``q`` on ``clock`` less the bare model's at the rate, µs, per repeat."""
    bare_at = {r["repeat"]: r["at_rate"][f"wall_{q}_us"] for r in runs if r["target"] == "bare"}
    return [
        r[clock][q] * 1000 - bare_at[r["repeat"]]
        for r in runs
        if r["target"] == target and r["repeat"] in bare_at
    ]


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
    p.add_argument("--oha", action="store_true", help="also time nginx and lanes with oha")
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
            jobs = [(name, "lanes") for name in names]
            if args.oha:
                jobs += [(name, "oha") for name in OHA_TARGETS]
            order = jobs[repeat % len(jobs) :] + jobs[: repeat % len(jobs)]
            for name, client in order:
                url, payload = targets[name]
                timed = lone(url, payload, args) if client == "lanes" else oha(url, payload, args)
                label = name if client == "lanes" else f"oha {name}"
                r = {"repeat": repeat, "target": label, "client": client, **timed}
                runs.append(r)
                lat, svc = r["latency_ms"], r["service_time_ms"]
                run.log(
                    f"  {repeat} {label:16} p50 {lat['p50']:.3f} ms  p99 {lat['p99']:.3f} ms"
                    f"  (from the actual send: p50 {svc['p50']:.3f}, p99 {svc['p99']:.3f})"
                )
                (args.out / "latency-floor.json").write_text(json.dumps(runs, indent=1) + "\n")
    for key in ("at_rate", "back_to_back"):
        cells = []
        for q in ("p50", "p99"):
            values = [r[key][f"wall_{q}_us"] for r in runs if r["target"] == "bare"]
            cells.append(
                f"{q} {statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f}) µs"
            )
        print(f"{'bare ' + key:12} " + ", ".join(cells))
    labels = [*names, *(f"oha {n}" for n in OHA_TARGETS if args.oha)]
    print("median (min-max) over repeats, µs; 'sent' = from the actual send")
    for name in labels:
        mine = [r for r in runs if r["target"] == name]
        cells = []
        for clock, word in (("latency_ms", "intended"), ("service_time_ms", "sent")):
            if clock == "latency_ms" and name.startswith("oha"):
                continue
            for q in ("p50", "p99"):
                cells.append(f"{q} {word} {spread([r[clock][q] * 1000 for r in mine])}")
        if not name.startswith("oha"):
            delays = [r["send_delay_ms"]["p50"] * 1000 for r in mine]
            cells.append(f"send delay p50 {spread(delays)}")
        print(f"{name:16} " + ", ".join(cells))
    print("added over the bare model at the same rate, paired per repeat, µs:")
    for name in ("lanes-infer", "lanes-noinline", *(["oha lanes-infer"] if args.oha else [])):
        cells = []
        for clock, word in (("latency_ms", "intended"), ("service_time_ms", "sent")):
            if clock == "latency_ms" and name.startswith("oha"):
                continue
            for q in ("p50", "p99"):
                values = added(runs, name, clock, q)
                limit = 300 if q == "p50" else 1000
                within = sum(v <= limit for v in values)
                cells.append(f"{q} {word} {spread(values)} (<= {limit} in {within}/{len(values)})")
        print(f"{name:16} " + ", ".join(cells))


if __name__ == "__main__":
    main()
