"""The client's part of each request's latency, deconvolved: the distribution C such that the
server's time plus C gives the client's measured latency quantiles (the twelfth round,
docs/results/calibration.md).

The simulator adds ``host.client_ms`` to each request as an independent draw: what the client's
side adds (its send and receive, the kernel's socket queues) beyond what the scenario runs
itself. spans.py measures it as a **difference of quantiles** — the client's latency quantile
minus the spans' ``total_ms`` quantile, at p50, p90 and p99 — and until the twelfth round that
difference was the table. It is not the distribution of what is added: for a sum S = X + C of
independent parts, Q_S(p) - Q_X(p) is not Q_C(p). A model's server time is narrow and the client
quantiles are not; the differences put 0.2-0.3 ms at the median where the sum needs almost
nothing, and a linear table between their p50 and p90 adds 0.3-0.5 ms from p60 to p85 — where
the mix's median lies (60 % `char_cnn`: the mix's median is its p83). The simulator then put the
mix's median at light load 17-27 % high while each model's own median was within 11 %.

**Rule.** Each request's server time is its span's ``total_ms`` plus ``--io-ms`` (the I/O
threads' CPU outside the spans, which the scenario's ``pre`` runs: 0.226 ms). C is a quantile
function at :data:`POINTS` (0 at p = 0, non-decreasing, linear between). For a candidate C, each
run's S is every span's server time plus C at :data:`DRAWS` evenly spaced p (a deterministic
convolution); its per-model p50 / p90 / p99 and the mix's are averaged over the repeats of each
variant (the lab's estimator) and set against the client's measured ones (the run files), as a
sum of squared relative errors (p99 weighted half: its repeats scatter most). The fit is a
seeded random coordinate search on C's increments, from spans.py's differences; the result,
its loss and that of the differences are printed. Only the lowest level is used: there the
server's side is least crowded and what the client adds is least tied to it.

Run:  python bench/calibrate/client_part.py RESULTS [--io-ms 0.226] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from compare import load_runs  # beside this file

from lanes.lab.spans import read as spans_of

POINTS = (0.0, 0.5, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99, 1.0)
"""The p of C's quantile points."""
DRAWS = 64
"""Values of C convolved with each request's server time."""
QS = (0.5, 0.9, 0.99)
WEIGHTS = np.array([1.0, 1.0, 0.5])
STEPS = 1500
IO_MS = 0.226


class Lowest:
    """The lowest level's runs: per run its spans' server times per model and the client's
    measured quantiles, keyed by variant."""

    def __init__(self, results: Path, io_ms: float) -> None:
        runs = load_runs(results)
        lowest = min(float(r["offered"]["rate_rps"]) for r in runs)
        self.runs: list[tuple[str, dict[str, np.ndarray], dict[str, np.ndarray]]] = []
        for run in runs:
            if float(run["offered"]["rate_rps"]) != lowest or not run.get("timeline"):
                continue
            trace = json.loads((results / run["timeline"]).read_text())
            server: dict[str, list[float]] = defaultdict(list)
            for s in spans_of(trace):
                server[s["model"]].append(s["total_ms"] + io_ms)
            if not server:
                continue
            load = run["load"]
            measured = {
                m: np.array([d["latency_ms"][f"p{round(q * 100)}"] for q in QS])
                for m, d in load["models"].items()
                if m in server
            }
            measured["mix"] = np.array([load["latency_ms"][f"p{round(q * 100)}"] for q in QS])
            self.runs.append(
                (run["variant"], {m: np.array(v) for m, v in server.items()}, measured)
            )
        if not self.runs:
            raise SystemExit(f"client_part: {results}'s lowest level has no request spans")
        self.rate = lowest
        self.measured = self._mean([m for _, _, m in self.runs])

    def _mean(self, rows: list[dict[str, np.ndarray]]) -> dict[tuple[str, str], np.ndarray]:
        per: dict[tuple[str, str], list[np.ndarray]] = defaultdict(list)
        for (variant, _, _), row in zip(self.runs, rows, strict=True):
            for key, qs in row.items():
                per[(variant, key)].append(qs)
        return {k: np.mean(v, axis=0) for k, v in per.items()}

    def predicted(self, c: np.ndarray) -> dict[tuple[str, str], np.ndarray]:
        """Per (variant, model or "mix") the mean over repeats of S's quantiles under C."""
        draws = np.interp((np.arange(DRAWS) + 0.5) / DRAWS, POINTS, c)
        rows = []
        for _, server, _ in self.runs:
            sums = {m: (x[:, None] + draws[None, :]).ravel() for m, x in server.items()}
            row = {m: np.quantile(s, QS) for m, s in sums.items()}
            row["mix"] = np.quantile(np.concatenate(list(sums.values())), QS)
            rows.append(row)
        return self._mean(rows)

    def loss(self, c: np.ndarray) -> float:
        pred = self.predicted(c)
        return float(
            sum(np.sum(WEIGHTS * ((pred[k] - m) / m) ** 2) for k, m in self.measured.items())
        )


def as_points(steps: np.ndarray) -> np.ndarray:
    """C's quantile values from its non-negative increments (0 at p = 0)."""
    return np.concatenate([[0.0], np.cumsum(np.abs(steps))])


def differences(lowest: Lowest) -> np.ndarray:
    """spans.py's estimate as a start: the mean over runs and models of the client's quantile
    minus the server time's, floored at 0, at p50 / p90 / p99, linear between."""
    gaps = [
        measured[m] - np.quantile(server[m], QS)
        for _, server, measured in lowest.runs
        for m in server
    ]
    p50, p90, p99 = np.maximum(np.mean(gaps, axis=0), 0.0)
    p90, p99 = max(p90, p50), max(p99, p90)
    return np.interp(POINTS, (0.0, 0.5, 0.9, 0.99, 1.0), (0.0, p50, p90, p99, 1.5 * p99))


def fit(lowest: Lowest, seed: int = 1, steps: int = STEPS) -> tuple[np.ndarray, float]:
    """The C of least loss (see the module docs) and its loss."""
    rng = np.random.default_rng(seed)
    best = np.diff(differences(lowest))
    best_loss = lowest.loss(as_points(best))
    for _ in range(steps):
        cand = best.copy()
        i = rng.integers(len(cand))
        cand[i] = abs(cand[i] + rng.normal(0.0, 0.2 * max(0.05, abs(cand[i]))))
        loss = lowest.loss(as_points(cand))
        if loss < best_loss:
            best, best_loss = cand, loss
    return as_points(best), best_loss


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="a calibration grid run with --trace-requests")
    ap.add_argument("--io-ms", type=float, default=IO_MS, help="I/O CPU outside the spans")
    ap.add_argument("--steps", type=int, default=STEPS, help="search steps")
    ap.add_argument("--json", type=Path, help="write client_ms's [[p, ms], ...] here")
    args = ap.parse_args(argv)
    lowest = Lowest(args.results, args.io_ms)
    start = differences(lowest)
    c, loss = fit(lowest, steps=args.steps)
    table: list[list[float]] = [[p, round(float(x), 4)] for p, x in zip(POINTS, c, strict=True)]
    pred, diff = lowest.predicted(c), lowest.predicted(start)
    print(
        f"{args.results}: {len(lowest.runs)} runs at {lowest.rate:.0f} req/s; loss "
        f"{loss:.4f} deconvolved, {lowest.loss(start):.4f} with the differences of quantiles"
    )
    print(f"client_ms = {json.dumps(table)}")
    start_table = [[p, round(float(x), 4)] for p, x in zip(POINTS, start, strict=True)]
    print(f"differences: {json.dumps(start_table)}")
    print("| variant | model | measured p50 / p90 / p99 | deconvolved | differences |")
    print("|---|---|---|---|---|")
    for (variant, model), m in sorted(lowest.measured.items()):

        def cell(qs: Any) -> str:
            return " / ".join(f"{x:.2f}" for x in qs)

        row = (cell(m), cell(pred[(variant, model)]), cell(diff[(variant, model)]))
        print(f"| {variant} | {model} | " + " | ".join(row) + " |")
    if args.json:
        args.json.write_text(json.dumps(table) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
