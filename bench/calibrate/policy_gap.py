"""Two policies of a lab run side by side, level by level: is their gap the policy's or the host's?

Reads one or more results folders of ``lanes bench run`` (``runs/VARIANT/L*-r*.json``, or saved
copies ``VARIANT/L*-r*.json``) holding variants ``A`` and ``B`` (default ``fifo`` and ``sjf``) and
prints, per offered rate, a Markdown table: each variant's p50, p99 and goodput (mean over the
repeats [their range]), B ÷ A of the means, and the range of B ÷ A over the *pairs* — A and B of
the same folder and repeat at that rate, which the lab runs back to back (one server start each,
interleaved once per repeat) on the same seeded arrivals (``--max-others CORES``: only the
pairs where neither run's other threads used more, see below). Then the same by which of the two ran
first in its repeat (a gap that follows the order, not the policy, is the host's), and what the
host did beside them: the server process's CPU per request (``server.process_cpu_s`` ÷
requests) and every other thread's cores (the busy cores minus the server's: the load
generator, the lab, anyone else on the machine). With a folder's ``timelines.json``
(``bench/calibrate/timelines.py``), also each model's runtime call of a batch of one (the run's
median ``measured_ms``), B ÷ A over the pairs.

Run:  python bench/calibrate/policy_gap.py RESULTS [RESULTS ...] [--a fifo] [--b sjf]
      [--markdown OUT.md]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from compare import emit, load_runs, others_cores  # bench/calibrate/compare.py, beside this file

Pair = tuple[dict[str, Any], dict[str, Any]]


def pairs(
    folders: list[Path], a: str, b: str, max_others: float | None = None
) -> dict[float, list[Pair]]:
    """By offered rate, every (A run, B run) of the same folder and repeat (with
    ``max_others``, both runs' other threads at most that many cores); each run with its
    timeline summary under ``"_timeline"`` when the folder has ``timelines.json``."""
    out: dict[float, list[Pair]] = {}
    for folder in folders:
        tl = folder / "timelines.json"
        timelines = json.loads(tl.read_text()) if tl.exists() else {}
        runs = {}
        for r in load_runs(folder):
            r["_timeline"] = timelines.get(r["id"])
            runs[(r["variant"], r["repeat"], r["offered"]["rate_rps"])] = r
        for (variant, repeat, rate), ra in sorted(runs.items()):
            rb = runs.get((b, repeat, rate))
            if variant != a or rb is None:
                continue
            if max_others is None or max(others_cores(ra), others_cores(rb)) <= max_others:
                out.setdefault(rate, []).append((ra, rb))
    return dict(sorted(out.items()))


MODELS = ("char_cnn", "line_rnn_zh", "line_rnn_en")


def calls(by_rate: dict[float, list[Pair]], a: str, b: str) -> str:
    """Each model's runtime call of a batch of one, median over the runs of the run's median
    (ms), A / B and B ÷ A (the pairs' range); empty without timelines."""
    lines = []
    for rate, ps in by_rate.items():
        row = []
        for model in MODELS:
            xs = [
                [p[i]["_timeline"]["models"][model]["1"]["measured_ms"] for i in (0, 1)]
                for p in ps
                if all(
                    "1" in (p[i]["_timeline"] or {}).get("models", {}).get(model, {})
                    for i in (0, 1)
                )
            ]
            if not xs:
                row.append("— | —")
                continue
            ma = statistics.median(x[0] for x in xs)
            mb = statistics.median(x[1] for x in xs)
            ratios = [x[1] / x[0] for x in xs]
            row.append(f"{ma:.3f} / {mb:.3f} | {mb / ma:.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
        if any(c != "— | —" for c in row):
            lines.append(f"| {rate:.0f} | " + " | ".join(row) + " |")
    if not lines:
        return ""
    head = "| offered/s | " + " | ".join(f"{m}: {a} / {b} | {b} ÷ {a}" for m in MODELS) + " |"
    return (
        f"\nA batch of one's runtime call (ms, timelines; median over runs of the run's median):"
        f"\n\n{head}\n|---:|" + "---:|---:|" * len(MODELS) + "\n" + "\n".join(lines) + "\n"
    )


def figure(run: dict[str, Any], name: str) -> float:
    """p50 / p99 (ms), goodput (req/s), the server's CPU per request (ms) or the other threads'
    cores of one run."""
    load, server = run["load"], run["server"]
    if name in ("p50", "p99"):
        return load["latency_ms"][name]
    if name == "goodput":
        return load["goodput_rps"]
    if name == "cpu_ms":
        return server["process_cpu_s"] / (load["achieved_rps"] * server["window_s"]) * 1e3
    return others_cores(run)  # "others"


FIGURES = (("p50", ".2f"), ("p99", ".1f"), ("goodput", ".0f"), ("cpu_ms", ".3f"), ("others", ".3f"))


def a_first(pair: Pair) -> bool:
    """Whether A's server ran before B's in their repeat."""
    return pair[0]["started_unix"] < pair[1]["started_unix"]


def cell(ps: list[Pair], name: str, fmt: str) -> str:
    """``A [lo-hi] / B [lo-hi] | B÷A of the means (pairs' lo-hi)``."""
    xa = [figure(p[0], name) for p in ps]
    xb = [figure(p[1], name) for p in ps]
    ratios = [y / x for x, y in zip(xa, xb, strict=True) if x]
    mean_a, mean_b = statistics.mean(xa), statistics.mean(xb)
    ratio = f"{mean_b / mean_a:.2f}" if mean_a else "n/a"
    spread = f" ({min(ratios):.2f}-{max(ratios):.2f})" if ratios else ""
    return (
        f"{mean_a:{fmt}} [{min(xa):{fmt}}-{max(xa):{fmt}}] / "
        f"{mean_b:{fmt}} [{min(xb):{fmt}}-{max(xb):{fmt}}] | {ratio}{spread}"
    )


def table(by_rate: dict[float, list[Pair]], a: str, b: str) -> str:
    """The per-level table, then the ratios by which variant ran first."""
    names = ("p50 ms", "p99 ms", "goodput/s", "server CPU ms/request", "other threads, cores")
    head = "| offered/s | pairs | " + " | ".join(
        f"{n}: {a} / {b} | {b} ÷ {a} (pairs)" for n in names
    )
    lines = [head + " |", "|---:|---:|" + "---|---:|" * len(names)]
    for rate, ps in by_rate.items():
        cells = " | ".join(cell(ps, name, fmt) for name, fmt in FIGURES)
        lines.append(f"| {rate:.0f} | {len(ps)} | {cells} |")
    lines += [
        "",
        f"By which ran first in its repeat, {b} ÷ {a} of the means (pairs):",
        "",
        f"| offered/s | p50, {a} first | p50, {b} first | p99, {a} first | p99, {b} first | "
        f"server CPU/request, {a} first | {b} first | other threads, {a} first | {b} first |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for rate, ps in by_rate.items():
        row = []
        for name in ("p50", "p99", "cpu_ms", "others"):
            for first in (True, False):
                sub = [p for p in ps if a_first(p) == first]
                if not sub:
                    row.append("—")
                    continue
                mean_a = statistics.mean(figure(p[0], name) for p in sub)
                mean_b = statistics.mean(figure(p[1], name) for p in sub)
                row.append(f"{mean_b / mean_a:.2f} ({len(sub)})")
        lines.append(f"| {rate:.0f} | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, nargs="+", help="lanes bench run results folders")
    ap.add_argument("--a", default="fifo", help="the first variant (the ratios' denominator)")
    ap.add_argument("--b", default="sjf", help="the second variant")
    ap.add_argument(
        "--max-others",
        type=float,
        help="only pairs whose runs' other threads used at most this many cores",
    )
    ap.add_argument("--markdown", type=Path, help="also write the table here")
    args = ap.parse_args(argv)
    by_rate = pairs(args.results, args.a, args.b, args.max_others)
    if not by_rate:
        raise SystemExit(f"policy_gap: no {args.a} and {args.b} runs of the same repeat and level")
    folders = ", ".join(str(f) for f in args.results)
    if args.max_others is not None:
        folders += f"; pairs whose runs' other threads used at most {args.max_others:g} cores"
    text = f"{folders}\n\n{table(by_rate, args.a, args.b)}{calls(by_rate, args.a, args.b)}"
    return emit(text, args.markdown)


if __name__ == "__main__":
    raise SystemExit(main())
