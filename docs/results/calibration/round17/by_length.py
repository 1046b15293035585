"""The calls' time off a core by their length (the seventeenth round,
docs/results/calibration.md): per variant and offered rate, every runtime call of the grid's
timelines binned by its own CPU time (``cpu_ms``), each bin's calls, their time off a core per
ms of CPU (pooled: the bin's off over its CPU) and the share of its calls that spent more than
half a ms off a core; repeats and models pooled, with each bin's calls by model.

Run: python docs/results/calibration/round17/by_length.py /tmp/r17/grid [--rates 600,800]
(reads the grid's runs/*/L*-r*.trace.json, which the repository does not keep)
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

BINS = (0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0)
"""Lower edges of the bins, ms of CPU; the last is open."""


def bin_of(cpu_ms: float) -> float:
    """The lower edge of the bin ``cpu_ms`` falls in."""
    return max(b for b in BINS if cpu_ms >= b)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("grid", type=Path)
    ap.add_argument("--rates", default="600,800")
    args = ap.parse_args(argv)
    rates = {float(r) for r in args.rates.split(",")}
    plan = {r["id"]: r for r in json.loads((args.grid / "plan.json").read_text())["runs"]}
    summary = json.loads((args.grid / "summary.json").read_text())
    some = next(iter(summary["variants"].values()))["levels"]
    rate = {lv["level"]: lv["offered_rps"] for lv in some}
    # (variant, rate, bin) -> [calls, cpu, off, calls off > 0.5 ms], models
    cells: dict[tuple[str, float, float], list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0])
    models: dict[tuple[str, float, float], Counter[str]] = defaultdict(Counter)
    for path in sorted(args.grid.glob("runs/*/L*-r*.trace.json")):
        run = plan[f"{path.parent.name}/{path.name.removesuffix('.trace.json')}"]
        r = rate[run["level"]]
        if r not in rates:
            continue
        for ev in json.loads(path.read_text())["traceEvents"]:
            a = ev.get("args", {})
            if ev.get("ph") != "X" or a.get("failed") or "cpu_ms" not in a:
                continue
            off = max(0.0, a["measured_ms"] - a["cpu_ms"])
            key = (run["variant"], r, bin_of(a["cpu_ms"]))
            c = cells[key]
            c[0] += 1
            c[1] += a["cpu_ms"]
            c[2] += off
            c[3] += off > 0.5
            models[key][a["model"]] += 1
    print("| variant | req/s | call's CPU ms | calls | off per ms of CPU | off > 0.5 ms | models |")
    print("|---|---:|---|---:|---:|---:|---|")
    for (variant, r, b), (n, cpu, off, late) in sorted(cells.items()):
        upper = next((x for x in BINS if x > b), None)
        span = f"{b:g}-{upper:g}" if upper is not None else f"≥ {b:g}"
        mix = ", ".join(f"{m} {k}" for m, k in models[(variant, r, b)].most_common())
        print(
            f"| `{variant}` | {r:.0f} | {span} | {n:.0f} | {off / cpu:.2f} | "
            f"{late / n:.2f} | {mix} |"
        )


if __name__ == "__main__":
    main()
