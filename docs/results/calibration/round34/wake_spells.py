"""Where a short model's slowest requests spend their time inside the server, and whether its
wake-ups come in spells (the thirty-fourth round, docs/results/calibration.md), off a grid kept
with its request traces (``runs/VARIANT/L*-r*.trace.json``, `--trace-requests`).

1. **Parts.** Per variant at the rate given, each of ``MODEL``'s request spans' parts (the
   server's own fields: ``pre_wait_ms`` the hook pool taking the request up, ``handoff_ms``,
   ``batch_wait_ms``, ``run_ms``, ``post_wait_ms`` ...; ``total_ms`` the whole time inside),
   the mean over the middle tenth by ``total_ms`` and over the slowest 1 %, repeats pooled.
2. **Spells.** Per run (every model's requests in arrival order): how the wait before pre of one
   request goes with the next one's (Pearson r of log(1 + ms)), with the same request's wait
   before post (``post_wait_ms``), the share of requests whose post wait is in its top tenth
   among those whose pre wait is (0.10 if the two were independent), and the spread of the mean
   pre wait over 50 ms bins (p10 / p50 / p90); the spells' depth, the sd of the log of those bin
   means less what the same waits in a shuffled order give (``sqrt(var - var_shuffled)``, 20
   shuffles: what the bins' own sampling spreads them by is taken out), and the bin means' lag-1
   and lag-5 autocorrelation (50 and 250 ms). The simulator draws each wake-up on its own, from
   a table chosen by the calls running at the time (``host.pre_wake_busy_ms``: busy_wakes.py),
   so for it these r are 0 beside what the calls running share.

Run:  python wake_spells.py GRID [--model char_cnn] [--rate 800] [--spell-rates 600,800]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np

VARIANTS = ("fifo", "sjf", "independent", "default")
PARTS = (
    "pre_wait_ms",
    "pre_return_ms",
    "handoff_ms",
    "batch_wait_ms",
    "scheduled_ms",
    "run_ms",
    "answer_wake_ms",
    "post_wait_ms",
    "post_return_ms",
    "total_ms",
)
BIN_MS = 50.0


def spans(trace: Path) -> list[dict[str, Any]]:
    """The run's request spans that carry their parts, by arrival."""
    events = json.loads(trace.read_text())["traceEvents"]
    rs = [
        e
        for e in events
        if e.get("cat") == "request" and e.get("ph") == "b" and "total_ms" in e.get("args", {})
    ]
    return sorted(rs, key=lambda e: e["ts"])


def level_of(grid: Path, variant: str, rate: float) -> str:
    """The run files' level prefix (``L3``) of ``rate`` under ``variant``."""
    for path in sorted((grid / "runs" / variant).glob("L*-r1.json")):
        if json.loads(path.read_text())["offered"]["rate_rps"] == rate:
            return path.name.split("-")[0]
    raise SystemExit(f"wake_spells: no {variant} run at {rate:g} req/s in {grid}")


def parts_table(grid: Path, model: str, rate: float) -> None:
    print(f"#### {model}'s parts at {rate:g} req/s, ms: middle tenth / slowest 1 %\n")
    print("| variant | requests | " + " | ".join(p.removesuffix("_ms") for p in PARTS) + " |")
    print("|---|---:|" + "---:|" * len(PARTS))
    for v in VARIANTS:
        level = level_of(grid, v, rate)
        rows = [
            e["args"]
            for t in sorted((grid / "runs" / v).glob(f"{level}-r*.trace.json"))
            for e in spans(t)
            if e["args"].get("model") == model
        ]
        rows.sort(key=lambda a: a["total_ms"])
        n = len(rows)
        mid, top = rows[int(0.45 * n) : int(0.55 * n)], rows[int(0.99 * n) :]
        cells = [
            f"{statistics.fmean(a[p] for a in mid):.2f} / {statistics.fmean(a[p] for a in top):.2f}"
            for p in PARTS
        ]
        print(f"| {v} | {n} | " + " | ".join(cells) + " |")
    print()


def log_bin_var(waits: np.ndarray, bins: np.ndarray) -> float:
    """The variance of the log of the waits' mean per bin (bins holding any)."""
    counts = np.bincount(bins)
    means = (np.bincount(bins, weights=waits) / np.maximum(counts, 1))[counts > 0]
    return float(np.var(np.log(means + 1e-3)))


def spell_depth(waits: np.ndarray, bins: np.ndarray, shuffles: int = 20) -> float:
    """The bins' sd of log beyond what the same waits in a random order give (module docs)."""
    rng = np.random.default_rng(1)
    base = statistics.fmean(log_bin_var(rng.permutation(waits), bins) for _ in range(shuffles))
    return float(np.sqrt(max(0.0, log_bin_var(waits, bins) - base)))


def lag_r(xs: np.ndarray, lag: int) -> float:
    """Pearson r of the series with itself ``lag`` steps later."""
    return float(np.corrcoef(xs[:-lag], xs[lag:])[0, 1]) if len(xs) > lag + 2 else float("nan")


def spells_table(grid: Path, rates: list[float]) -> None:
    print("#### Wake-ups in spells, per run (every model's requests in arrival order)\n")
    print(
        "| variant | req/s | run | requests | r(pre, next pre) | r(pre, post) | "
        "P(post top 10 % given pre top 10 %) | 50 ms bins' mean pre wait p10 / p50 / p90 ms | "
        "spells' sd of log | bins' r at 50 / 250 ms |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for v in VARIANTS:
        for rate in rates:
            level = level_of(grid, v, rate)
            for t in sorted((grid / "runs" / v).glob(f"{level}-r*.trace.json")):
                rs = spans(t)
                pre = np.array([e["args"]["pre_wait_ms"] for e in rs])
                post = np.array([e["args"]["post_wait_ms"] for e in rs])
                ts = np.array([e["ts"] for e in rs]) / 1e3
                lp, lq = np.log1p(pre), np.log1p(post)
                hi_pre, hi_post = pre > np.quantile(pre, 0.9), post > np.quantile(post, 0.9)
                bins = ((ts - ts[0]) // BIN_MS).astype(int)
                counts = np.bincount(bins)
                means = (np.bincount(bins, weights=pre) / np.maximum(counts, 1))[counts > 0]
                q = np.quantile(means, [0.1, 0.5, 0.9])
                depth = spell_depth(pre, bins)
                lm = np.log(means + 1e-3)
                print(
                    f"| {v} | {rate:g} | {t.name.removesuffix('.trace.json')} | {len(rs)} | "
                    f"{np.corrcoef(lp[:-1], lp[1:])[0, 1]:.2f} | {np.corrcoef(lp, lq)[0, 1]:.2f} | "
                    f"{hi_post[hi_pre].mean():.2f} | {q[0]:.2f} / {q[1]:.2f} / {q[2]:.2f} | "
                    f"{depth:.2f} | {lag_r(lm, 1):.2f} / {lag_r(lm, 5):.2f} |"
                )
    print()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("grid", type=Path)
    ap.add_argument("--model", default="char_cnn")
    ap.add_argument("--rate", type=float, default=800.0)
    ap.add_argument("--spell-rates", default="600,800")
    args = ap.parse_args()
    print(f"{args.grid}\n")
    parts_table(args.grid, args.model, args.rate)
    spells_table(args.grid, [float(r) for r in args.spell_rates.split(",")])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
