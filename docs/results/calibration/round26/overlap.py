"""Whether a runtime call's CPU grows with the calls running beside it, under every policy
(the twenty-sixth round).

For each runtime call of a grid's runs (its span as timelines.py takes it), the time-average
number k of runtime calls running during it (itself included, round22/stretch.py's
running_means), and its CPU (``cpu_ms``) over the median CPU of the same (model, batch size)'s
calls that ran alone (k < 1.1) in the same variant over the grid. Per variant and offered rate:
the calls' mean k, and the median ratio by k (binned to 1, 1.25, 1.5, 1.75, 2, 2.5, 3+).

Run from bench/calibrate, with PYTHONPATH=. :
  python ../../docs/results/calibration/round26/overlap.py GRID [GRID ...]
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "round22"))

from stretch import running_means
from timelines import call_span

VARIANTS = ("fifo", "sjf", "independent", "default")
BINS = (1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0)
ALONE = 1.1


def k_bin(k: float) -> float:
    return max(b for b in BINS if b <= k + 0.125) if k < 3 else 3.0


def calls(grids: list[Path], variant: str) -> Iterator[tuple[float, str, int, float, float]]:
    """(rate, model, batch, k, cpu_ms) of every call of the variant's runs."""
    for grid in grids:
        for path in sorted(grid.glob(f"runs/{variant}/L*-r*.trace.json")):
            run = json.loads(path.with_name(path.name.replace(".trace.json", ".json")).read_text())
            trace = json.loads(path.read_text())
            jobs = [e for e in trace["traceEvents"] if e.get("cat") == "job" and e.get("ph") == "X"]
            jobs = [e for e in jobs if not e["args"].get("failed") and "cpu_ms" in e["args"]]
            for ev, k in zip(jobs, running_means([call_span(e) for e in jobs]), strict=True):
                a = ev["args"]
                yield run["offered"]["rate_rps"], a["model"], a["batch_size"], k, a["cpu_ms"]


def main(argv: list[str]) -> int:
    grids = [Path(g) for g in argv]
    for variant in VARIANTS:
        got = list(calls(grids, variant))
        alone: dict[tuple[str, int], list[float]] = defaultdict(list)
        for _, m, n, k, cpu in got:
            if k < ALONE:
                alone[(m, n)].append(cpu)
        base = {p: statistics.median(v) for p, v in alone.items() if len(v) >= 20}
        by: dict[float, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
        ks: dict[float, list[float]] = defaultdict(list)
        allk: dict[float, list[float]] = defaultdict(list)
        for rate, m, n, k, cpu in got:
            if (m, n) in base:
                r = cpu / base[(m, n)]
                by[rate][k_bin(k)].append(r)
                allk[k_bin(k)].append(r)
                ks[rate].append(k)
        print(f"**{variant}**: calls' CPU over the same call's alone, median (count) by k\n")
        print("| offered/s | mean k | all | " + " | ".join(f"k = {b:g}" for b in BINS) + " |")
        print("|---:|---:|---:|" + "---:|" * len(BINS))
        for rate in sorted(by):
            rs = [r for b in by[rate].values() for r in b]
            cells = [
                f"{statistics.median(by[rate][b]):.3f} ({len(by[rate][b])})"
                if len(by[rate][b]) >= 20
                else ""
                for b in BINS
            ]
            print(
                f"| {rate:.0f} | {statistics.fmean(ks[rate]):.2f} | {statistics.median(rs):.3f} | "
                + " | ".join(cells)
                + " |"
            )
        cells = [
            f"{statistics.median(allk[b]):.3f} ({len(allk[b])})" if len(allk[b]) >= 20 else ""
            for b in BINS
        ]
        print("| all | | | " + " | ".join(cells) + " |\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
