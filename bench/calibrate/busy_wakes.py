"""Each request's wake-ups beside the runtime calls running when they begin, read off a lab
grid run with request spans (the twelfth round, docs/results/calibration.md).

A request waits twice for a thread on the server's side (bench/calibrate/spans.py): **before its
pre** (``pre_wait_ms + pre_return_ms``: the hook pool taking it up, the handler taking it back)
and **before its post** (``answer_wake_ms + post_wait_ms``: the handler waking for its answer,
the pool taking the hook up). On two cores these waits are short while no runtime call runs and
grow when the device threads hold the cores: a woken thread then waits for a core. The
simulator drew them from one table measured at the lowest level, whatever ran meanwhile, so its
wake-ups did not grow with the load. This script gives the tables of the rule that replaces it
(docs/sim.md, ``host.pre_wake_busy_ms``): a wake-up beginning while n calls run draws from the
busy table with probability ``min(1, n / cores)``, else from the idle one.

- **n**: the runtime calls running at the wake-up's start (each job's ``measured_ms`` up to its
  slice's end, as timelines.py takes a call; the device hold before it is not a call): the
  handler's start plus ``decode_ms`` for the wake before pre, the driver sending the answers
  (the span's ``back`` event) for the wake before post.
- **idle** (``pre_wake_ms``, ``post_wake_ms``): the wake-ups with n = 0 at the lowest level;
  **busy** (``pre_wake_busy_ms``, ``post_wake_busy_ms``): those with n >= cores at every level.
  Each quantile is the mean over the variants of the variant's pooled quantile (spans.py's
  estimator).
- Per variant and level, the p50 / p90 / p99 of each wake-up by n (0, 1, 2, 3+) with counts,
  so the rule can be checked where 0 < n < cores: there the wake-ups should look like the mix
  of the two tables with weight n / cores.

Run:  python bench/calibrate/busy_wakes.py RESULTS [--cores 2] [--markdown OUT.md] [--json OUT]
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from compare import emit, load_runs  # beside this file
from spans import QUANTILES
from timelines import call_span, quantile

WAKES = ("pre", "post")
KEYS = ("pre_wake_ms", "pre_wake_busy_ms", "post_wake_ms", "post_wake_busy_ms")
"""The scenario's keys :func:`tables` gives (beside a ``_count`` of each)."""
SHOWN = (0.5, 0.9, 0.99)

Wakes = dict[str, dict[int, list[float]]]
"""Per wake-up ("pre", "post"): per n running calls, the wake-ups in ms."""


class Running:
    """How many runtime calls run at a time on a trace's clock: each job's call as timelines.py
    takes it (:func:`timelines.call_span`, the hold before it left out), as the simulator's
    ``calls_on`` counts them."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        calls = [
            call_span(e)
            for e in events
            if e.get("cat") == "job" and e.get("ph") == "X" and not e["args"].get("failed")
        ]
        edges = sorted(
            itertools.chain.from_iterable(((start, 1), (end, -1)) for start, end in calls)
        )
        self.times = [t for t, _ in edges]
        self.level = list(itertools.accumulate(d for _, d in edges))

    def at(self, ts: float) -> int:
        i = bisect.bisect_right(self.times, ts)
        return self.level[i - 1] if i else 0


def run_wakes(trace: dict[str, Any]) -> Wakes:
    """One run's wake-ups by the calls running at their start (see the module docs)."""
    events = trace.get("traceEvents", [])
    running = Running(events)
    sent = {
        e["id"]: e["ts"]
        for e in events
        if e.get("cat") == "request" and e.get("name") == "back" and e.get("ph") == "b"
    }
    out: Wakes = {w: defaultdict(list) for w in WAKES}
    for e in events:
        if e.get("cat") != "request" or e.get("ph") != "b" or "args" not in e:
            continue
        a = e["args"]
        pre_at = e["ts"] + 1000.0 * a["decode_ms"]
        out["pre"][running.at(pre_at)].append(a.get("pre_wait_ms", 0.0) + a["pre_return_ms"])
        if e.get("id") in sent:
            wake = a["answer_wake_ms"] + a.get("post_wait_ms", 0.0)
            out["post"][running.at(sent[e["id"]])].append(wake)
    return out


def collect(results: Path) -> dict[tuple[str, float], Wakes]:
    """Per (variant, offered rate): the wake-ups of every repeat pooled, by n."""
    pooled: dict[tuple[str, float], Wakes] = defaultdict(
        lambda: {w: defaultdict(list) for w in WAKES}
    )
    for run in load_runs(results):
        if not run.get("timeline"):
            continue
        trace = json.loads((results / run["timeline"]).read_text())
        key = (run["variant"], float(run["offered"]["rate_rps"]))
        for wake, by_n in run_wakes(trace).items():
            for n, xs in by_n.items():
                pooled[key][wake][n].extend(xs)
    if not any(xs for w in pooled.values() for by_n in w.values() for xs in by_n.values()):
        raise SystemExit(f"busy_wakes: {results}'s timelines hold no request spans")
    return pooled


def tables(pooled: dict[tuple[str, float], Wakes], cores: int) -> dict[str, Any]:
    """The scenario's four tables (see the module docs): ``{key: [[p, ms], ...]}``."""
    lowest = min(rate for _, rate in pooled)
    variants = sorted({v for v, _ in pooled})
    out: dict[str, Any] = {}
    for wake in WAKES:
        idle = [sorted(pooled[(v, lowest)][wake].get(0, [])) for v in variants]
        busy = [
            sorted(
                x
                for (var, _), w in pooled.items()
                if var == v
                for n, xs in w[wake].items()
                if n >= cores
                for x in xs
            )
            for v in variants
        ]
        for key, per_variant in ((f"{wake}_wake_ms", idle), (f"{wake}_wake_busy_ms", busy)):
            have = [xs for xs in per_variant if xs]
            out[key] = [
                [p, round(sum(quantile(xs, p) for xs in have) / len(have), 4)] for p in QUANTILES
            ]
            out[key + "_count"] = sum(len(xs) for xs in have)
    return out


def report(pooled: dict[tuple[str, float], Wakes], cores: int) -> list[str]:
    lines = [
        "| variant | req/s | wake-up | n = 0 | n = 1 | n = 2 | n >= 3 |",
        "|---|---:|---|---|---|---|---|",
    ]
    for (variant, rate), w in sorted(pooled.items()):
        for wake in WAKES:
            cells = []
            for lo, hi in ((0, 0), (1, 1), (2, 2), (3, 10**6)):
                xs = sorted(x for n, v in w[wake].items() if lo <= n <= hi for x in v)
                cells.append(
                    f"{len(xs)}: " + " / ".join(f"{quantile(xs, p):.2f}" for p in SHOWN)
                    if len(xs) >= 20
                    else (f"{len(xs)}" if xs else "—")
                )
            lines.append(f"| {variant} | {rate:.0f} | {wake} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="a lanes bench run folder with request spans")
    ap.add_argument("--cores", type=int, default=2, help="the host's cores (default 2)")
    ap.add_argument("--markdown", type=Path, help="also write the table here")
    ap.add_argument("--json", type=Path, help="the scenario's four wake-up tables")
    args = ap.parse_args()
    pooled = collect(args.results)
    found = tables(pooled, args.cores)
    head = [
        f"Wake-ups of {args.results} by the runtime calls running at their start "
        "(bench/calibrate/busy_wakes.py): per variant, offered rate and wake-up, for n running "
        "calls the count and p50 / p90 / p99 in ms (repeats pooled; — under 20).",
        "",
    ]
    keys = [k for k in found if not k.endswith("_count")]
    tail = ["", *(f"{k} = {json.dumps(found[k])}  # {found[k + '_count']} wake-ups" for k in keys)]
    emit("\n".join(head + report(pooled, args.cores) + tail) + "\n", args.markdown)
    if args.json:
        args.json.write_text(json.dumps(found, indent=1) + "\n")


if __name__ == "__main__":
    main()
