"""Predicted vs measured: ``lanes sim`` on this host's scenario against a real lab run.

Reads a results folder of ``lanes bench run examples/experiments/calibration.toml`` (the demo
zoo's OCR mix on ``--devices cpu:2 --cpu-threads 1`` under ``independent``, ``fifo`` and
``sjf``), simulates the same policies at the same offered rates on
``examples/scenarios/cpu-2core.toml`` and prints a Markdown table of p50, p99 and goodput,
measured (mean over repeats) and predicted (mean over seeds), with the relative error.

**The fitted parameter.** Device costs by batch size, batching, contention and the models' own
pre- and post-processing come from ``bench/calibrate/measure.py``, not from this run. What no
micro-benchmark sees is the rest of the CPU the live server spends per request — HTTP, request
and response encoding, the event loop, the GIL hand-offs around each batch — on the same two
cores as the devices. It is read off the run's *lowest* level (least contention), pooled over
variants and repeats, from the server process's own CPU time, so other processes on the machine
do not enter it:

    server CPU per request = process CPU-seconds / requests
    other CPU per request  = server CPU per request - the scenario's device cost per request
                             (its cost curve at the mean batch size measured at that level)

and the scenario's CPU phases are scaled so that each request's ``pre + post`` equals it (each
``pre`` gains the same amount). With ``host.shared_cores = true`` the devices hold one of the two
cores while they run, so device work and CPU phases compete as they do here. The load
generators' own CPU (they run on the same cores) is not in the model. Every other level and every
policy is a prediction.

Run:  python bench/calibrate/compare.py RESULTS [--scenario FILE] [--seeds 3]
      [--requests 40000] [--markdown OUT.md]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from lanes import sim
from lanes.sim.scenario import Cost, Scenario

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SCENARIO = ROOT / "examples" / "scenarios" / "cpu-2core.toml"
CORES = 2


def load_runs(results: Path) -> list[dict[str, Any]]:
    """Every grid run of the results folder (probes of a capacity search left out)."""
    runs = []
    for path in sorted((results / "runs").glob("*/L*-r*.json")):
        if path.name.endswith(".trace.json"):
            continue
        runs.append(json.loads(path.read_text()))
    if not runs:
        sys.exit(f"compare: {results}/runs holds no run files")
    return runs


def other_cpu_ms(runs: list[dict[str, Any]], scenario: Scenario) -> float:
    """Server CPU per request beyond the devices' solo cost, at the lowest level, ms."""
    low = min(r["level"] for r in runs)
    per_request = []
    for r in runs:
        cpu = r["server"].get("process_cpu_s")
        devices = r["server"]["device"].values()
        jobs = sum(d["jobs"] for d in devices)
        if r["level"] != low or cpu is None or not jobs:
            continue
        requests = max(1, r["load"]["requests"])
        device_ms = jobs * mix_batch_cost(scenario, requests / jobs) / requests
        per_request.append(cpu * 1e3 / requests - device_ms)
    if not per_request:
        sys.exit("compare: the lowest level has no server CPU figures")
    return max(0.0, statistics.median(per_request))


def mix_batch_cost(scenario: Scenario, size: float) -> float:
    """The mix's mean device cost of a batch of ``size``, ms."""
    total = sum(s.share for s in scenario.services)
    return sum(s.share / total * batch_cost(s, size) for s in scenario.services)


def batch_cost(service: Any, n: float) -> float:
    """The service's mean cost of a batch of ``n`` (docs/sim.md, "Batching"), ms."""
    points = [(1.0, service.gpu.mean_ms)]
    if service.batching is not None:
        points += [(float(k), ms) for k, ms in service.batching.batch_ms]
    if len(points) == 1:
        return service.gpu.mean_ms * n
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if n <= x1:
            return y0 + (y1 - y0) * (n - x0) / (x1 - x0)
    (x0, y0), (x1, y1) = points[-2], points[-1]
    return y0 + (y1 - y0) * (n - x0) / (x1 - x0)


def calibrated(scenario: Scenario, cpu_ms: float) -> Scenario:
    """``scenario`` on shared cores, its CPU phases at ``cpu_ms`` per request."""
    mix = sum(s.share * (s.pre.mean_ms + s.post.mean_ms) for s in scenario.services)
    extra = max(0.0, cpu_ms - mix)
    services = []
    for s in scenario.services:
        services.append(replace(s, pre=Cost(s.pre.dist, s.pre.mean_ms + extra, s.pre.cv)))
    host = replace(scenario.host, shared_cores=True)
    return replace(scenario, host=host, services=tuple(services))


def measured(runs: list[dict[str, Any]]) -> dict[tuple[str, float], dict[str, float]]:
    """(variant, offered rps) → mean over repeats of p50, p99, goodput."""
    groups: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault((r["variant"], r["offered"]["rate_rps"]), []).append(r["load"])
    return {
        key: {
            "p50": statistics.mean(x["latency_ms"]["p50"] for x in loads),
            "p99": statistics.mean(x["latency_ms"]["p99"] for x in loads),
            "goodput": statistics.mean(x["goodput_rps"] for x in loads),
            "repeats": len(loads),
        }
        for key, loads in groups.items()
    }


def predicted(
    scenario: Scenario, variants: list[str], rates: list[float], seeds: int, requests: int
) -> dict[tuple[str, float], dict[str, float]]:
    """The simulator at the same offered rates: mean over seeds."""
    per_load = scenario_rate(scenario)
    loads = [rate / per_load for rate in rates]
    res = sim.run(scenario, variants, loads, seeds=list(range(1, seeds + 1)), requests=requests)
    out = {}
    for variant in variants:
        for rate, load in zip(rates, loads, strict=True):
            pts = [p for p in res.points if p["policy"] == variant and abs(p["load"] - load) < 1e-9]
            out[(variant, rate)] = {
                "p50": statistics.mean(p["latency_ms"]["p50"] for p in pts),
                "p99": statistics.mean(p["latency_ms"]["p99"] for p in pts),
                "goodput": statistics.mean(p["goodput_rps"] for p in pts),
            }
    return out


def scenario_rate(scenario: Scenario) -> float:
    """Requests/s at load 1.0 (``lanes sim``'s rule: GPUs busy if every request ran alone)."""
    total = sum(s.share for s in scenario.services)
    mean_gpu = sum(s.share / total * s.gpu.mean_ms for s in scenario.services)
    return scenario.host.gpus * 1000.0 / mean_gpu


def error(pred: float, meas: float) -> str:
    if meas == 0:
        return "n/a"
    return f"{(pred - meas) / meas * 100:+.0f} %"


def table(
    meas: dict[tuple[str, float], dict[str, float]],
    pred: dict[tuple[str, float], dict[str, float]],
) -> str:
    head = (
        "| variant | offered/s | p50 ms meas / sim | err | p99 ms meas / sim | err "
        "| goodput/s meas / sim | err |\n|---|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    rows = []
    for key in sorted(meas, key=lambda k: (k[0], k[1])):
        m, p = meas[key], pred[key]
        rows.append(
            f"| {key[0]} | {key[1]:.0f} | {m['p50']:.1f} / {p['p50']:.1f} | "
            f"{error(p['p50'], m['p50'])} | {m['p99']:.1f} / {p['p99']:.1f} | "
            f"{error(p['p99'], m['p99'])} | {m['goodput']:.0f} / {p['goodput']:.0f} | "
            f"{error(p['goodput'], m['goodput'])} |"
        )
    return head + "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="a lanes bench run results folder")
    ap.add_argument("--scenario", type=Path, default=DEFAULT_SCENARIO)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=40_000)
    ap.add_argument("--markdown", type=Path, help="also write the table here")
    args = ap.parse_args(argv)
    runs = load_runs(args.results)
    base = Scenario.load(args.scenario)
    cpu_ms = other_cpu_ms(runs, base)
    scenario = calibrated(base, cpu_ms)
    meas = measured(runs)
    variants = sorted({k[0] for k in meas})
    rates = sorted({k[1] for k in meas})
    pred = predicted(scenario, variants, rates, args.seeds, args.requests)
    text = (
        f"fitted at {min(rates):.0f} req/s: other server CPU per request {cpu_ms:.2f} ms; "
        f"scenario {args.scenario.name}, shared cores, {args.seeds} seeds x {args.requests} "
        "requests\n\n" + table(meas, pred)
    )
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
