"""Predicted vs measured: ``lanes sim`` on this host's scenario against a real lab run.

Reads a results folder of ``lanes bench run examples/experiments/calibration.toml`` (the demo
zoo's OCR mix on ``--devices cpu:2 --cpu-threads 1`` under ``independent``, ``fifo`` and
``sjf``), simulates the same policies at the same offered rates on
``examples/scenarios/cpu-2core.toml`` and prints a Markdown table of p50, p99 and goodput,
measured (mean over repeats) and predicted (mean over seeds), with the relative error.

**The model.** Device costs by batch size, batching, contention and the models' own pre- and
post-processing come from ``bench/calibrate/measure.py``, not from this run. The scenario's host
(``host.shared_cores``: the devices are the same two cores as the CPU work; ``[host.interpreter]``:
the server's Python work holds one interpreter lock, the GIL, and ONNX Runtime's call does not;
``host.busy_cores``: CPU other work keeps busy all the time) is described in docs/sim.md.

**What is read off the run** (every run of every variant and level, pooled; no latency or goodput
figure enters, so every p50, p99 and goodput is a prediction):

1. ``busy_cores`` — *measured*: the machine's busy cores minus the server process's, per run
   (``server.cpu_busy_per_core`` summed, minus ``process_cpu_s / window_s``), median over runs.
   That is the lab's load generators and runner on the same two cores.
2. The server's CPU beyond its devices — *fitted*, least squares over runs:

       process CPU-s - device work = a * window_s + p * requests + q * batches

   with device work = batches x the scenario's cost curve at the run's mean batch size (requests
   = achieved rate x window, batches = the devices' job count). ``p`` is the Python work per
   request (the event loop's HTTP and decoding, pre, post, the response): each service's ``pre``
   gains ``p`` minus the scenario's mix of ``pre + post`` (it holds the lock; nothing when the
   scenario carries it already, as cpu-2core.toml does). ``q`` is the Python
   work per batch (dispatch, collate, split, completion): ``[host.interpreter] batch_ms``. ``a``
   is CPU the server spends whatever the load (cores): added to ``busy_cores`` (it does not hold
   the lock in the model; which threads spend it is not known).
3. ``[host.interpreter] handoff_ms`` — *measured*, from the unloaded latency the lab takes at
   each server start (sequential single requests per model: ``p50 / slowdown`` in every run):
   what a lone request takes beyond its work in the model (``pre + p - mix + batch_ms + gpu +
   post``, means), divided by the 3 times a lone request takes the lock (pre, its batch, post);
   median over models and server starts. The rule puts all of that gap on threads waking up
   (each hop to a thread that then takes the GIL); the client's own latency is in it too.
4. ``[host.interpreter] convoy_ms`` — *fitted*, to a CPU figure, not to latency: the lock's idle
   time each time it is handed to a waiting phase. Overloaded, the real host leaves cores idle
   (``server.host_cpu_idle``) although work waits: the lock, not the cores, is the bottleneck,
   and it idles between holders. The rule: the value in [0, ``handoff_ms``] (bisection, 8 steps,
   1 seed) at which the simulator's idle CPU at the run's highest level, mean over variants,
   equals the measured one (mean over variants and repeats).

Every level and every policy is then simulated with that one scenario.

Run:  python bench/calibrate/compare.py RESULTS [--scenario FILE] [--seeds 3]
      [--requests 40000] [--markdown OUT.md]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lanes import sim
from lanes.sim.scenario import Cost, Interpreter, Scenario, Service

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SCENARIO = ROOT / "examples" / "scenarios" / "cpu-2core.toml"
CORES = 2


def load_runs(results: Path) -> list[dict[str, Any]]:
    """Every grid run of the results folder (probes of a capacity search left out): a ``lanes
    bench run`` folder (``runs/VARIANT/L*-r*.json``) or a saved copy (``VARIANT/L*-r*.json``)."""
    runs = []
    paths = sorted(results.glob("runs/*/L*-r*.json")) or sorted(results.glob("*/L*-r*.json"))
    for path in paths:
        if path.name.endswith(".trace.json"):
            continue
        runs.append(json.loads(path.read_text()))
    if not runs:
        sys.exit(f"compare: {results} holds no run files (runs/VARIANT/L*-r*.json)")
    return runs


@dataclass(frozen=True)
class Fit:
    """What :func:`fit` reads off a run (see the module docs)."""

    busy_cores: float
    """Cores the load generators keep busy (measured)."""
    server_cores: float
    """``a``: server CPU whatever the load, cores."""
    request_ms: float
    """``p``: the server's Python work per request, ms."""
    batch_ms: float
    """``q``: the server's Python work per batch, ms."""
    handoff_ms: float = 0.0
    """A lone request's latency beyond its modelled work, per taking of the lock, ms."""
    convoy_ms: float = 0.0
    """The lock's idle time per hand-over, ms."""


def fit(runs: list[dict[str, Any]], scenario: Scenario) -> Fit:
    """The run's figures the model takes, by the rules in the module docs."""
    others, rows, ys = [], [], []
    for r in runs:
        s = r["server"]
        cpu, window = s.get("process_cpu_s"), s.get("window_s")
        jobs = sum(d["jobs"] for d in s["device"].values())
        if cpu is None or not window or not jobs:
            continue
        if s.get("cpu_busy_per_core"):
            others.append(sum(s["cpu_busy_per_core"]) - cpu / window)
        requests = r["load"]["achieved_rps"] * window
        device_s = jobs * mix_batch_cost(scenario, requests / jobs) / 1e3
        rows.append((window, requests, jobs))
        ys.append(cpu - device_s)
    if len(rows) < 3 or not others:
        sys.exit("compare: the run needs server CPU figures (process_cpu_s, cpu_busy_per_core)")
    a, p, q = least_squares(rows, ys)
    f = Fit(max(0.0, statistics.median(others)), max(0.0, a), p * 1e3, max(0.0, q * 1e3))
    f = replace(f, handoff_ms=handoff_ms(runs, calibrated(scenario, f)))
    return replace(f, convoy_ms=convoy_ms(runs, scenario, f))


def convoy_ms(runs: list[dict[str, Any]], scenario: Scenario, f: Fit) -> float:
    """Rule 4 of the module docs: bisection on the idle CPU at the highest level."""
    top = max(r["offered"]["rate_rps"] for r in runs)
    idle = [r["server"]["host_cpu_idle"] for r in runs if r["offered"]["rate_rps"] == top]
    variants = sorted({r["variant"] for r in runs})
    target = statistics.mean(idle)

    def sim_idle(convoy: float) -> float:
        sc = calibrated(scenario, replace(f, convoy_ms=convoy))
        load = top / scenario_rate(sc)
        res = sim.run(sc, variants, [load], seeds=[1], requests=20_000)
        return float(statistics.mean(p["cpu_idle"] for p in res.points))

    lo, hi = 0.0, f.handoff_ms
    if sim_idle(lo) >= target:
        return lo
    if sim_idle(hi) <= target:
        return hi
    for _ in range(8):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if sim_idle(mid) < target else (lo, mid)
    return (lo + hi) / 2


def handoff_ms(runs: list[dict[str, Any]], scenario: Scenario) -> float:
    """Rule 3 of the module docs: the unloaded p50's gap to the model, per taking of the lock."""
    unloaded: dict[tuple[str, int, str], float] = {}
    for r in runs:
        for model, m in r["load"]["models"].items():
            if m.get("slowdown"):
                key = (r["variant"], r["repeat"], model)
                unloaded[key] = m["latency_ms"]["p50"] / m["slowdown"]
    lock = scenario.host.interpreter
    batch = lock.batch_ms if lock is not None else 0.0
    lone = {
        s.name: s.pre.mean_ms + batch + s.gpu.mean_ms + s.post.mean_ms for s in scenario.services
    }
    gaps = [(ms - lone[key[2]]) / 3 for key, ms in unloaded.items() if key[2] in lone]
    if not gaps:
        sys.exit("compare: the run has no unloaded latencies (load.models.*.slowdown)")
    return max(0.0, statistics.median(gaps))


def least_squares(rows: list[tuple[float, float, float]], ys: list[float]) -> list[float]:
    """``x`` minimising ``|rows x - ys|``, by the normal equations (3 unknowns)."""
    n = len(rows[0])
    ata = [[math.fsum(r[i] * r[j] for r in rows) for j in range(n)] for i in range(n)]
    aty = [math.fsum(r[i] * y for r, y in zip(rows, ys, strict=True)) for i in range(n)]
    # Gaussian elimination with partial pivoting.
    m = [[*row, b] for row, b in zip(ata, aty, strict=True)]
    for c in range(n):
        pivot = max(range(c, n), key=lambda k: abs(m[k][c]))
        m[c], m[pivot] = m[pivot], m[c]
        for k in range(c + 1, n):
            f = m[k][c] / m[c][c]
            m[k] = [x - f * y for x, y in zip(m[k], m[c], strict=True)]
    x = [0.0] * n
    for c in reversed(range(n)):
        x[c] = (m[c][n] - math.fsum(m[c][k] * x[k] for k in range(c + 1, n))) / m[c][c]
    return x


def mix_batch_cost(scenario: Scenario, size: float) -> float:
    """The mix's mean device cost of a batch of ``size``, ms."""
    total = sum(s.share for s in scenario.services)
    return sum(s.share / total * batch_cost(s, size) for s in scenario.services)


def batch_cost(service: Service, n: float) -> float:
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


def calibrated(scenario: Scenario, f: Fit) -> Scenario:
    """``scenario`` on shared cores with the interpreter lock and the run's figures ``f``."""
    mix = sum(s.share * (s.pre.mean_ms + s.post.mean_ms) for s in scenario.services)
    extra = max(0.0, f.request_ms - mix)
    services = []
    for s in scenario.services:
        services.append(replace(s, pre=Cost(s.pre.dist, s.pre.mean_ms + extra, s.pre.cv)))
    host = replace(
        scenario.host,
        shared_cores=True,
        busy_cores=f.busy_cores + f.server_cores,
        interpreter=Interpreter(f.batch_ms, f.handoff_ms, f.convoy_ms),
    )
    return replace(scenario, host=host, services=tuple(services))


def measured(runs: list[dict[str, Any]]) -> dict[tuple[str, float], dict[str, float]]:
    """(variant, offered rps) → mean over repeats of p50, p99, goodput."""
    groups: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault((r["variant"], r["offered"]["rate_rps"]), []).append(r["load"])
    out: dict[tuple[str, float], dict[str, float]] = {}
    for key, loads in groups.items():
        figures = {
            "p50": [x["latency_ms"]["p50"] for x in loads],
            "p99": [x["latency_ms"]["p99"] for x in loads],
            "goodput": [x["goodput_rps"] for x in loads],
        }
        row: dict[str, float] = {"repeats": len(loads)}
        for name, xs in figures.items():
            row[name] = statistics.mean(xs)
            row[name + "_lo"], row[name + "_hi"] = min(xs), max(xs)
        out[key] = row
    return out


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


KNEE = 0.90
"""A level is below the knee when its measured goodput is at least this share of the offer."""


def summary(
    meas: dict[tuple[str, float], dict[str, float]],
    pred: dict[tuple[str, float], dict[str, float]],
) -> str:
    """Per variant, the relative errors' range over the levels below the knee, and how many
    predictions fall within the repeats' own range."""
    lines = [f"below the knee (measured goodput >= {KNEE:.0%} of the offer):"]
    for variant in sorted({k[0] for k in meas}):
        keys = [k for k in sorted(meas) if k[0] == variant and meas[k]["goodput"] >= KNEE * k[1]]
        if not keys:
            continue
        parts = []
        for name in ("p50", "p99", "goodput"):
            errs = [(pred[k][name] - meas[k][name]) / meas[k][name] * 100 for k in keys]
            inside = sum(
                meas[k][name + "_lo"] <= pred[k][name] <= meas[k][name + "_hi"] for k in keys
            )
            parts.append(
                f"{name} {min(errs):+.0f} to {max(errs):+.0f} % ({inside}/{len(keys)} in range)"
            )
        rates = ", ".join(f"{k[1]:.0f}" for k in keys)
        lines.append(f"- {variant} ({rates} req/s): " + "; ".join(parts))
    return "\n".join(lines) + "\n"


def error(pred: float, meas: float) -> str:
    if meas == 0:
        return "n/a"
    return f"{(pred - meas) / meas * 100:+.0f} %"


def table(
    meas: dict[tuple[str, float], dict[str, float]],
    pred: dict[tuple[str, float], dict[str, float]],
) -> str:
    head = (
        "| variant | offered/s | p50 ms meas [repeats] / sim | err | p99 ms meas [repeats] / sim "
        "| err | goodput/s meas [repeats] / sim | err |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    rows = []
    for key in sorted(meas, key=lambda k: (k[0], k[1])):
        m, p = meas[key], pred[key]
        cells = []
        for name, fmt in (("p50", ".1f"), ("p99", ".1f"), ("goodput", ".0f")):
            cells.append(
                f"{m[name]:{fmt}} [{m[name + '_lo']:{fmt}}-{m[name + '_hi']:{fmt}}] / "
                f"{p[name]:{fmt}} | {error(p[name], m[name])}"
            )
        rows.append(f"| {key[0]} | {key[1]:.0f} | " + " | ".join(cells) + " |")
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
    f = fit(runs, base)
    scenario = calibrated(base, f)
    meas = measured(runs)
    variants = sorted({k[0] for k in meas})
    rates = sorted({k[1] for k in meas})
    pred = predicted(scenario, variants, rates, args.seeds, args.requests)
    head = (
        f"read off the run: load generators {f.busy_cores:.3f} cores (measured); server "
        f"{f.server_cores:.3f} cores + {f.request_ms:.3f} ms per request + {f.batch_ms:.3f} ms "
        f"per batch beyond its devices (fitted); thread wake-up {f.handoff_ms:.3f} ms "
        f"(measured); lock convoy {f.convoy_ms:.3f} ms (fitted). Scenario {args.scenario.name} "
        f"with shared cores, the interpreter lock, busy_cores {scenario.host.busy_cores:.3f}; "
        f"{args.seeds} seeds x {args.requests} requests"
    )
    text = f"{head}\n\n{table(meas, pred)}\n{summary(meas, pred)}"
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
