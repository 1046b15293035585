"""Two ``lanes serve`` processes sharing two sim GPUs through one ``lanes arbiter``: no overlap on
a device, and shortest-job-first order across the processes (issue 7 §6, docs/results/arbiter.md).

Setup, per run (everything fresh, in a temporary folder):

- ``lanes arbiter --devices sim:2 --policy P --trace arb.json --metrics-port 0``;
- process **A**: ``lanes serve --models repoA --devices sim:2 --arbiter unix:SOCK --trace a.json``
  serving ``long``; process **B**: the same with repoB serving ``short``. Both models are
  ``python``-adapter models whose ``predict`` returns its input, so a simulated GPU holds each
  batch for the model's ``[cost]`` curve alone (``long``: 20 ms + 2 ms/row, up to 8 rows;
  ``short``: 2 ms + 0.2 ms/row, up to 16 rows) and the CPU work is negligible. (The demo zoo's
  ONNX models would also compute their outputs on the CPU while the sim GPU holds the batch; on a
  2-core machine that CPU time, not the modelled cost, would set the hold times.) Each model has
  ``num_batch_threads = 2``, so either process can hold both devices and the two always compete;
  with one batch in flight per model each would simply keep a device of its own.
- Open-loop Poisson load on both at once, ``lanes bench URL --body ... -R RATE -d SECONDS``
  (defaults: 70 requests/s on ``long``, 300 on ``short``: by the modelled costs roughly 70 % of
  the two devices' time); then SIGTERM to the servers (their timelines are written) and to the
  daemon (its timeline is written).

Runs alternate between ``--policy sjf`` and ``--policy fifo`` (sjf, fifo, sjf, fifo, ...),
``--repeats`` times each. What each run measures:

1. **Overlap**, from the daemon's timeline: per device, the grants (``"ph": "X"`` slices from GRANT
   to RELEASE) sorted by start; an overlap is a grant starting before the previous one ended.
   Cross-check from the servers' own timelines (one host's monotonic clock; each trace's
   ``otherData.origin_unix_s`` places its origin, so both are put on one axis): the batches both
   processes actually ran, per device, must not overlap either; the smallest gap between a batch
   of one process and the next batch of the other on a device is reported. Grants per model in the
   daemon's trace are compared with batches per model in the servers' (a grant whose queue
   emptied meanwhile is released without a batch, so grants >= batches).
2. **SJF across processes**:
   - grant wait (ACQUIRE → GRANT) per model from the daemon's histogram
     ``lanes_arbiter_grant_wait_seconds{model}``: its exact mean (sum / count) and p50 / p99
     interpolated within buckets as Prometheus' ``histogram_quantile`` does (buckets 1, 2.5, 5,
     10, 50 ms around these values: coarse);
   - contested hand-offs, from the servers' timelines: when a batch ends on a device at time t
     while *both* models have requests queued (a model has a request queued at t iff one of its
     batches started after t with its oldest request enqueued before t — batches are cut in
     arrival order), which model's batch runs next on that device. With two devices and at most
     two batches per model in flight, each model then has its ACQUIRE waiting at the daemon, so
     this is the daemon's choice between a long and a short job: sjf should give it to ``short``;
   - the queue wait of each batch's oldest request (servers' timelines: exact, includes waiting
     while the model's own two batches run) and each process's end-to-end latency (lanes bench,
     from each request's intended send time).

The summary gives, per policy and figure, the median and mean ± 95 % CI (Student t) over the
repeats. The machine this was written on has 2 cores shared with other work: daemon, servers and
load generators share them, so hold times stretch (CPU contention) and repeats are noisy.

    .venv/bin/python bench/arbiter/serve_pair.py [--repeats 5] [--seconds 15]
        [--rate-long 70] [--rate-short 300] [--out bench/arbiter/out] [--quick]
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import math
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LANES = [sys.executable, "-m", "lanes"]
HISTOGRAM = "lanes_arbiter_grant_wait_seconds"
BODY = '{"inputs":[{"name":"x","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}]}'
MODEL_PY = 'def predict(batch):\n    return {"y": batch["x"]}\n'


@dataclass(frozen=True)
class Spec:
    """One process's model: name, cost curve (ms), largest batch."""

    name: str
    fixed_ms: float
    per_item_ms: float
    max_batch: int


LONG = Spec("long", 20.0, 2.0, 8)
SHORT = Spec("short", 2.0, 0.2, 16)


def write_repo(folder: Path, spec: Spec) -> Path:
    """A model repository holding one python-adapter model that returns its input."""
    model = folder / spec.name
    model.mkdir(parents=True)
    (model / "model.py").write_text(MODEL_PY)
    (model / "model.toml").write_text(
        f'adapter = "python"\nfile = "model.py"\n'
        f"[batching]\nmax_batch_size = {spec.max_batch}\nnum_batch_threads = 2\n"
        f"max_enqueued_batches = 64\n"
        f"[cost]\nfixed_ms = {spec.fixed_ms}\nper_item_ms = {spec.per_item_ms}\n"
        f'[[inputs]]\nname = "x"\ndatatype = "FP32"\nshape = [-1, 4]\n'
        f'[[outputs]]\nname = "y"\ndatatype = "FP32"\nshape = [-1, 4]\n'
    )
    return folder


class Proc:
    """A subprocess whose stderr goes to a file, polled for the line that announces it."""

    def __init__(self, cmd: list[str], log: Path) -> None:
        self.log = log
        self.stderr = log.open("wb")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.stderr)

    def wait_for(self, pattern: str, timeout_s: float = 30.0) -> str:
        """The first match of ``pattern`` in the stderr so far (polled until ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        while True:
            found = re.search(pattern, self.log.read_text(errors="replace"))
            if found:
                return found.group(1)
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{self.log.name}: no {pattern!r}:\n{self.log.read_text()}")
            time.sleep(0.05)

    def stop(self, timeout_s: float = 20.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.stderr.close()
        return rc


def scrape(url: str) -> dict[str, Any]:
    """The grant-wait histogram per model: {model: {"buckets": [(le, n)...], "sum", "count"}},
    read from the daemon's OpenMetrics page with prometheus_client's parser."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    with urllib.request.urlopen(url, timeout=5) as r:
        text = r.read().decode()
    out: dict[str, dict[str, Any]] = {}
    for family in text_string_to_metric_families(text):
        if family.name != HISTOGRAM:
            continue
        for sample in family.samples:
            h = out.setdefault(sample.labels["model"], {"buckets": [], "sum": 0.0, "count": 0.0})
            kind = sample.name.removeprefix(f"{HISTOGRAM}_")
            if kind == "bucket":
                h["buckets"].append((float(sample.labels["le"]), float(sample.value)))
            elif kind in ("sum", "count"):
                h[kind] = float(sample.value)
    return out


def quantile(q: float, cumulative: list[tuple[float, float]]) -> float | None:
    """Prometheus' histogram_quantile: linear within the bucket that holds rank q * total."""
    cumulative = sorted(cumulative)
    if not cumulative or cumulative[-1][1] <= 0:
        return None
    rank = q * cumulative[-1][1]
    lower, below = 0.0, 0.0
    for le, count in cumulative:
        if count >= rank:
            if math.isinf(le):
                return lower
            return lower + (le - lower) * (rank - below) / max(count - below, 1e-12)
        lower, below = le, count
    return lower


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100) of ``values``; None when empty."""
    if not values:
        return None
    s = sorted(values)
    return s[max(0, math.ceil(q / 100 * len(s)) - 1)]


def slices(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in trace["traceEvents"] if e.get("ph") == "X"]


def ns_span(e: dict[str, Any]) -> tuple[int, int]:
    """A trace slice's (start, end) in integer ns."""
    start = round(e["ts"] * 1e3)
    return start, start + round(e["dur"] * 1e3)


def overlaps(spans: Sequence[tuple[float, float]]) -> int:
    """How many spans (start, end) start before the previous one (by start) ended."""
    return sum(1 for (_, end), (start, _) in itertools.pairwise(sorted(spans)) if start < end)


def queued_at(jobs: list[dict[str, Any]]) -> Callable[[float], bool]:
    """Whether one model had a request queued at t: a batch with enqueued < t < start."""
    spans = sorted((j["enqueued"], j["start"]) for j in jobs)
    firsts = [s for s, _ in spans]
    latest = list(itertools.accumulate((e for _, e in spans), max))

    def at(t: float) -> bool:
        k = bisect.bisect_left(firsts, t)
        return k > 0 and latest[k - 1] > t

    return at


def analyse(arb: dict[str, Any], servers: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Overlaps, counts and contested hand-offs from the daemon's and the servers' timelines."""
    grants = slices(arb)
    # Integer ns (ts and dur are µs with three decimals): a grant made in the wake-up that took
    # the previous RELEASE starts exactly where it ended, which float sums would blur.
    per_device = {
        d: [ns_span(e) for e in grants if e["tid"] == d] for d in sorted({e["tid"] for e in grants})
    }
    gaps = [b[0] - a[1] for s in per_device.values() for a, b in itertools.pairwise(sorted(s))]
    # The servers' batches on one axis: µs since the epoch (each origin_unix_s + ts).
    jobs: list[dict[str, Any]] = []
    for who, trace in servers.items():
        origin_us = trace["otherData"]["origin_unix_s"] * 1e6
        for e in slices(trace):
            start = origin_us + e["ts"]
            jobs.append({
                "who": who, "model": e["args"]["model"], "device": e["tid"], "start": start,
                "end": start + e["dur"], "enqueued": start - 1e3 * e["args"]["queue_wait_ms"],
                "queue_wait_ms": e["args"]["queue_wait_ms"],
            })  # fmt: skip
    jobs.sort(key=lambda j: j["start"])
    cross_gap = math.inf
    server_overlaps = 0
    for d in {j["device"] for j in jobs}:
        on = [j for j in jobs if j["device"] == d]
        server_overlaps += overlaps([(j["start"], j["end"]) for j in on])
        for a, b in itertools.pairwise(on):
            if a["who"] != b["who"]:
                cross_gap = min(cross_gap, b["start"] - a["end"])
    # Contested hand-offs: a batch ends while both models have requests queued.
    models = sorted({j["model"] for j in jobs})
    waiting = {m: queued_at([j for j in jobs if j["model"] == m]) for m in models}
    # jobs are sorted by start: per device, the starts and the models in that order.
    starts: dict[int, list[float]] = {}
    owner: dict[int, list[str]] = {}
    for j in jobs:
        starts.setdefault(j["device"], []).append(j["start"])
        owner.setdefault(j["device"], []).append(j["model"])
    won = dict.fromkeys(models, 0)
    for j in jobs:
        t = j["end"]
        if len(models) < 2 or not all(waiting[m](t) for m in models):
            continue
        k = bisect.bisect_left(starts[j["device"]], t)
        if k < len(starts[j["device"]]):
            won[owner[j["device"]][k]] += 1
    contested = sum(won.values())
    return {
        "grants": {m: sum(1 for e in grants if e["args"]["model"] == m) for m in models},
        "grant_overlaps": sum(overlaps(s) for s in per_device.values()),
        "grants_per_device": {str(d): len(s) for d, s in per_device.items()},
        # Hand-offs on a device decided in the same wake-up as the RELEASE (gap 0), and the gap.
        "back_to_back_grants": sum(1 for g in gaps if g == 0),
        "min_grant_gap_us": min(gaps) / 1e3 if gaps else None,
        "grant_ends": sorted({e["args"]["end"] for e in grants}),
        "batches": {m: sum(1 for j in jobs if j["model"] == m) for m in models},
        "batch_overlaps": server_overlaps,
        "min_cross_process_gap_us": None if math.isinf(cross_gap) else cross_gap,
        "contested_handoffs": contested,
        "contested_won_by_short": None if not contested else won.get(SHORT.name, 0) / contested,
        "queue_wait_ms": {
            m: {
                "p50": percentile([j["queue_wait_ms"] for j in jobs if j["model"] == m], 50),
                "p99": percentile([j["queue_wait_ms"] for j in jobs if j["model"] == m], 99),
            }
            for m in models
        },
    }


def one_run(policy: str, i: int, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    run = tmp / f"{i}-{policy}"
    run.mkdir()
    sock = run / "arb.sock"
    daemon = Proc(
        [*LANES, "arbiter", "--socket", str(sock), "--devices", "sim:2", "--policy", policy,
         "--trace", str(run / "arb.json"), "--metrics-port", "0"],
        run / "arb.err",
    )  # fmt: skip
    started: list[Proc] = [daemon]
    try:
        metrics = daemon.wait_for(r"metrics on (http://\S+/metrics)")
        servers: dict[str, tuple[Proc, Spec]] = {}
        for who, spec in (("A", LONG), ("B", SHORT)):
            repo = write_repo(run / f"repo{who}", spec)
            p = Proc(
                [*LANES, "serve", "--models", str(repo), "--devices", "sim:2",
                 "--arbiter", f"unix:{sock}", "--port", "0", "--metrics-port", "off",
                 "--trace", str(run / f"{who}.json")],
                run / f"{who}.err",
            )  # fmt: skip
            started.append(p)
            servers[who] = (p, spec)
        urls = {who: p.wait_for(r"lanes serve: (http://\S+)") for who, (p, _) in servers.items()}
        before = scrape(metrics)
        rates = {"A": args.rate_long, "B": args.rate_short}
        loads = []
        for who, (_, spec) in servers.items():
            cmd = [
                *LANES, "bench", f"{urls[who]}/v2/models/{spec.name}/infer", "--body", BODY,
                "-H", "Content-Type: application/json", "-R", str(rates[who]),
                "-d", f"{args.seconds}s", "-t", "1", "-c", "256", "--seed", str(i + 1),
                "--json", str(run / f"bench-{who}.json"), "-q",
            ]  # fmt: skip
            loads.append(subprocess.Popen(cmd))
        for load in loads:
            if load.wait() != 0:
                raise SystemExit(f"lanes bench exited {load.returncode}")
        after = scrape(metrics)
    finally:
        codes = [p.stop() for p in reversed(started)]  # servers first, then the daemon
    if any(codes):
        raise SystemExit(f"exit statuses {codes} (see {run})")
    row: dict[str, Any] = {"policy": policy, "repeat": i}
    row.update(
        analyse(
            json.loads((run / "arb.json").read_text()),
            {who: json.loads((run / f"{who}.json").read_text()) for who in servers},
        )
    )
    wait: dict[str, Any] = {}
    for model, h in after.items():
        old = before.get(model, {"buckets": [], "sum": 0.0, "count": 0.0})
        prev = dict(old["buckets"])
        cumulative = [(le, n - prev.get(le, 0.0)) for le, n in h["buckets"]]
        count = h["count"] - old["count"]
        wait[model] = {
            "grants": count,
            "mean_ms": 1e3 * (h["sum"] - old["sum"]) / count if count else None,
            "p50_ms": 1e3 * (quantile(0.5, cumulative) or 0.0),
            "p99_ms": 1e3 * (quantile(0.99, cumulative) or 0.0),
            # Grants that found no free device at once (waited past the 1 ms bucket bound).
            "waited_over_1ms": 1 - dict(cumulative).get(1e-3, 0.0) / count if count else None,
        }
    row["grant_wait"] = wait
    row["bench"] = {}
    for who, (_, spec) in servers.items():
        b = json.loads((run / f"bench-{who}.json").read_text())
        row["bench"][spec.name] = {
            "rate": b["rate"], "requests": b["requests"], "rps": b["rps"],
            "status_codes": b["status_codes"], "errors": sum(b["errors"].values()),
            "late_sends_fraction": b["late_sends_fraction"],
            "p50_ms": b["latency_ms"]["p50"], "p99_ms": b["latency_ms"]["p99"],
        }  # fmt: skip
    return row


T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228]
"""Two-sided 95 % quantiles of Student's t for 1..10 degrees of freedom (then ~1.96)."""


def stat(values: list[float]) -> dict[str, float | None]:
    """Median, mean and the half-width of the 95 % confidence interval of the mean."""
    if not values:
        return {"median": None, "mean": None, "ci95": None}
    n = len(values)
    half = None
    if n > 1:
        t = T95[n - 2] if n - 2 < len(T95) else 1.96
        half = t * statistics.stdev(values) / math.sqrt(n)
    return {"median": statistics.median(values), "mean": statistics.fmean(values), "ci95": half}


FIGURES: dict[str, tuple[str, ...]] = {
    "grant wait p50 ms": ("grant_wait", "{m}", "p50_ms"),
    "grant wait p99 ms": ("grant_wait", "{m}", "p99_ms"),
    "grant wait mean ms": ("grant_wait", "{m}", "mean_ms"),
    "grants waiting > 1 ms": ("grant_wait", "{m}", "waited_over_1ms"),
    "batch queue wait p50 ms": ("queue_wait_ms", "{m}", "p50"),
    "batch queue wait p99 ms": ("queue_wait_ms", "{m}", "p99"),
    "latency p50 ms": ("bench", "{m}", "p50_ms"),
    "latency p99 ms": ("bench", "{m}", "p99_ms"),
}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for policy in dict.fromkeys(r["policy"] for r in rows):  # in the order run
        mine = [r for r in rows if r["policy"] == policy]
        shares = [r["contested_won_by_short"] for r in mine]
        s: dict[str, Any] = {
            "runs": len(mine),
            "grant_overlaps": sum(r["grant_overlaps"] for r in mine),
            "batch_overlaps": sum(r["batch_overlaps"] for r in mine),
            "contested_won_by_short": stat([v for v in shares if v is not None]),
        }
        for figure, path in FIGURES.items():
            for m in (LONG.name, SHORT.name):
                values = []
                for r in mine:
                    v: Any = r
                    for key in path:
                        v = v.get(key.format(m=m)) if isinstance(v, dict) else None
                    if isinstance(v, (int, float)):
                        values.append(float(v))
                s[f"{figure} · {m}"] = stat(values)
        out[policy] = s
    return out


def table(summary: dict[str, Any]) -> str:
    """The summary as a Markdown table: a row per figure, a column per policy."""
    policies = list(summary)

    def cell(v: Any) -> str:
        if not isinstance(v, dict):
            return str(v)
        if v["median"] is None:
            return "n/a"
        ci = "" if v["ci95"] is None else f" ± {v['ci95']:.3g}"
        return f"{v['median']:.3g} ({v['mean']:.3g}{ci})"

    lines = [f"| figure | {' | '.join(policies)} |", "|---" * (len(policies) + 1) + "|"]
    for figure in summary[policies[0]]:
        lines.append(f"| {figure} | {' | '.join(cell(summary[p][figure]) for p in policies)} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5, help="runs per policy (default 5)")
    ap.add_argument("--seconds", type=float, default=15.0, help="load per run (default 15)")
    ap.add_argument("--rate-long", type=float, default=70.0, help="requests/s on long")
    ap.add_argument("--rate-short", type=float, default=300.0, help="requests/s on short")
    ap.add_argument("--policies", default="sjf,fifo", help="alternated in each repeat")
    ap.add_argument("--out", type=Path, default=HERE / "out")
    ap.add_argument("--quick", action="store_true", help="smoke run: 1 repeat of 3 s")
    args = ap.parse_args()
    if args.quick:
        args.repeats, args.seconds = 1, 3.0
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="lanes-serve-pair-") as tmp:
        for i in range(args.repeats):
            for policy in args.policies.split(","):
                row = one_run(policy, i, args, Path(tmp))
                print(json.dumps(row), flush=True)
                rows.append(row)
    result: dict[str, Any] = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.node()} {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, {platform.platform()}, load {os.getloadavg()}",
        "command": " ".join(sys.argv),
        "models": {"long (process A)": vars(LONG), "short (process B)": vars(SHORT)},
        "runs": rows,
        "summary": summary(rows),
    }
    (args.out / "serve_pair.json").write_text(json.dumps(result, indent=2) + "\n")
    print("median (mean ± 95 % CI) over the runs of each policy:")
    print(table(result["summary"]))
    failed = sum(r["grant_overlaps"] + r["batch_overlaps"] for r in rows)
    if failed:
        print(f"FAIL: {failed} overlapping grants or batches on a device", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
