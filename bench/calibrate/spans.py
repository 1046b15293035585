"""Each request's way through the server, read off a lab run with request spans.

A lab whose variants run ``lanes serve --trace-requests N`` keeps, in each run's timeline
(``runs/VARIANT/L*-r*.trace.json``), one span per successful request: its stages on the driver's
clock (crates/lanes-server/src/spans.rs; docs/metrics.md, "Request spans"). This script sets
them beside the client's latency and the simulator's terms:

- **inside**: the batch's wait (``batch_wait_ms``: the request's arrival in the scheduler's
  state to its batch's start) plus its call (``run_ms``) — what tails.py rebuilds from the
  device timeline alone;
- **server outside**: ``total_ms`` minus inside — decode, the hooks, the hand-offs between the
  I/O threads, the blocking pool, the driver and the device thread, encoding;
- **wake before pre** (``pre_wait_ms + pre_return_ms``: the blocking pool taking the hook up and
  the handler taking the request back) and **wake before post** (``answer_wake_ms +
  post_wait_ms``: the handler waking for its answer and the pool taking the hook up): the two
  waits the simulator's ``host.pre_wake_ms`` and ``host.post_wake_ms`` draw (docs/sim.md);
- **client part at a quantile**: the client's measured latency quantile (mean over repeats of
  each run's, from the run file) minus the spans' ``total_ms`` quantile (pooled): what the server
  cannot see (the client's send and receive, the kernel's socket queues, hyper's read and write).
  A difference of quantiles, not a quantile of differences: client and server are not joined
  per request.

Per variant, level and model the p50/p90/p99 of each (the mean over repeats of each run's, the
lab's estimator); per variant and level the slowest 1 % of requests by ``total_ms`` (repeats
pooled): their models and the mean of each term; and per variant and level the two waits'
quantile functions over every model (repeats pooled), in the scenario's ``[[p, ms], ...]`` form
(``--json``), with each model's client part at p50, p90 and p99 (``client_part``).

Run:  python bench/calibrate/spans.py RESULTS [--markdown OUT.md] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from compare import emit, load_runs  # beside this file
from timelines import quantile

from lanes.lab.spans import read as spans_of

QUANTILES = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 1.0)
"""The points of each wait's quantile function in ``--json`` (the scenario's form)."""
SHOWN = (0.5, 0.9, 0.99)


def terms(span: dict[str, Any]) -> dict[str, float]:
    """One span's terms (ms; see the module docs)."""
    inside = span["batch_wait_ms"] + span["run_ms"]
    return {
        "total": span["total_ms"],
        "inside": inside,
        "outside": span["total_ms"] - inside,
        "wake_pre": span.get("pre_wait_ms", 0.0) + span["pre_return_ms"],
        "wake_post": span["answer_wake_ms"] + span.get("post_wait_ms", 0.0),
        "handoff": span["handoff_ms"],
        "pre": span["decode_ms"] + span["pre_ms"],
        "post": span["post_ms"] + span["post_return_ms"],
        "batch": span["batch_size"],
    }


TERMS = ("total", "inside", "outside", "wake_pre", "wake_post", "handoff", "pre", "post")


Runs = dict[tuple[str, float], dict[str, list[list[dict[str, float]]]]]


def collect(results: Path) -> tuple[Runs, dict[tuple[str, float], Any]]:
    """Per (variant, offered rate): per model each repeat's spans' terms, and the client's
    quantiles per model (lists over repeats)."""
    spans: Runs = defaultdict(lambda: defaultdict(list))
    client: dict[tuple[str, float], dict[str, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    runs = load_runs(results)
    for run in runs:
        if not run.get("timeline"):
            continue
        key = (run["variant"], float(run["offered"]["rate_rps"]))
        trace = json.loads((results / run["timeline"]).read_text())
        per_model: dict[str, list[dict[str, float]]] = defaultdict(list)
        for s in spans_of(trace):
            per_model[s["model"]].append(terms(s))
        for model, rows in per_model.items():
            spans[key][model].append(rows)
        for model, m in run["load"]["models"].items():
            for q in ("p50", "p90", "p99"):
                client[key][model][q].append(m["latency_ms"][q])
    if not spans:
        sys.exit(f"spans: {results}'s timelines hold no request spans (run with --trace-requests)")
    return spans, client


def mean_quantiles(repeats: list[list[dict[str, float]]], term: str) -> list[float]:
    """The :data:`SHOWN` quantiles of ``term``, each the mean over repeats of the run's."""
    per_run = [sorted(r[term] for r in rows) for rows in repeats if rows]
    return [sum(quantile(xs, p) for xs in per_run) / len(per_run) for p in SHOWN]


def report(results: Path) -> tuple[list[str], dict[str, Any]]:
    spans, client = collect(results)
    lines = [
        f"Request spans of {results} (bench/calibrate/spans.py): per variant, offered rate and",
        "model, p50 / p90 / p99 in ms, each the mean over repeats of the run's quantile (the lab's",
        "estimator); `client` is the client's measured latency, `client - total` what the server",
        "cannot see.",
        "",
        "| variant | req/s | model | n | client | total | client - total | inside | outside |"
        " wake before pre | wake before post | driver hand-offs | pre | post |",
        "|---|---:|---|---:|---|---|---|---|---|---|---|---|---|---|",
    ]
    tables: dict[str, Any] = {}
    slow_rows: list[str] = []
    for (variant, rate), models in sorted(spans.items()):
        pooled: dict[str, list[float]] = defaultdict(list)
        gaps: dict[str, list[float]] = {}
        for model, repeats in sorted(models.items()):
            rows = [r for rep in repeats for r in rep]
            for t in ("wake_pre", "wake_post"):
                pooled[t].extend(r[t] for r in rows)
            col = {t: mean_quantiles(repeats, t) for t in TERMS}

            def q3(qs: list[float]) -> str:
                return " / ".join(f"{x:.2f}" for x in qs)

            c = client[(variant, rate)][model]
            cq = [sum(c[q]) / len(c[q]) for q in ("p50", "p90", "p99")] if c["p50"] else []
            gap = [cq[i] - col["total"][i] for i in range(len(SHOWN))] if cq else []
            if gap:
                gaps[model] = [round(x, 4) for x in gap]
            lines.append(
                f"| {variant} | {rate:.0f} | {model} | {len(rows)} | "
                + (" / ".join(f"{x:.2f}" for x in cq) or "—")
                + f" | {q3(col['total'])} | "
                + (" / ".join(f"{x:.2f}" for x in gap) or "—")
                + " | "
                + " | ".join(q3(col[t]) for t in TERMS[1:])
                + " |"
            )
        slow_rows.append(slowest(variant, rate, models))
        tables[f"{variant}@{rate:.0f}"] = {
            **{
                t: [[p, round(quantile(sorted(xs), p), 4)] for p in QUANTILES]
                for t, xs in pooled.items()
            },
            "client_part": gaps,
        }
    lines += [
        "",
        "The slowest 1 % of requests by `total` (repeats pooled): how many of each model, and the",
        "mean of each term in ms.",
        "",
        "| variant | req/s | n | models | total | inside | outside | wake before pre |"
        " wake before post | driver hand-offs | pre | post | batch size |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *slow_rows,
    ]
    return lines, tables


def slowest(variant: str, rate: float, models: dict[str, list[list[dict[str, float]]]]) -> str:
    """The row of the slowest 1 % of requests at (variant, rate), repeats pooled."""
    rows = sorted(
        ((r, m) for m, repeats in models.items() for rep in repeats for r in rep),
        key=lambda x: x[0]["total"],
    )
    top = rows[int(len(rows) * 0.99) :] or rows[-1:]
    count: dict[str, int] = defaultdict(int)
    for _, m in top:
        count[m] += 1
    who = ", ".join(f"{m} {n}" for m, n in sorted(count.items(), key=lambda x: -x[1]))

    def mean(term: str) -> str:
        return f"{sum(r[term] for r, _ in top) / len(top):.2f}"

    return (
        f"| {variant} | {rate:.0f} | {len(top)} | {who} | "
        + " | ".join(mean(t) for t in (*TERMS, "batch"))
        + " |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="a lanes bench run folder with request spans")
    ap.add_argument("--markdown", type=Path, help="also write the table here")
    ap.add_argument("--json", type=Path, help="the waits' quantile functions per variant and rate")
    args = ap.parse_args()
    lines, tables = report(args.results)
    emit("\n".join(lines) + "\n", args.markdown)
    if args.json:
        args.json.write_text(json.dumps(tables, indent=1) + "\n")


if __name__ == "__main__":
    main()
