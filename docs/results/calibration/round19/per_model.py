"""The nineteenth round's per-model reading (docs/results/calibration.md): one same-hour reading's
scenario (same_hour.py's arguments, run from bench/calibrate) simulated again, and per policy,
rate and model the lab's p50 and p99 (mean over repeats) against the simulator's, then each
engine policy's mean batch size and runtime call per model, lab (timelines.json) against
simulated.

Run (from bench/calibrate):  python per_model.py GRID SAME_HOUR_ARGS...
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

import compare
import same_hour

from lanes import sim

MODELS = ("char_cnn", "line_rnn_en", "line_rnn_zh")
POLICIES = ("fifo", "sjf", "independent")


def lab_runs(grid: Path, policy: str, rate: float) -> list[dict[str, Any]]:
    runs = [json.loads(p.read_text()) for p in sorted(grid.glob(f"runs/{policy}/L*-r*.json"))]
    return [r for r in runs if "load" in r and r["offered"]["rate_rps"] == rate]


def main(argv: list[str]) -> int:
    grid, args = Path(argv[0]), argv[1:]
    caught: dict[str, Any] = {}
    simulate = same_hour.simulate

    def grab(scenario: Any, variants: Any, rates: Any, *rest: Any, **kw: Any) -> Any:
        caught["scenario"], caught["rates"] = scenario, rates
        return simulate(scenario, variants, rates, *rest, **kw)

    same_hour.simulate = grab
    same_hour.main([*args, "--markdown", "/dev/null"])
    scenario, rates = caught["scenario"], caught["rates"]
    per = compare.scenario_rate(scenario)
    res = sim.run(scenario, list(POLICIES), [r / per for r in rates], seeds=[1, 2, 3],
                  requests=40000)  # fmt: skip

    def points(policy: str, rate: float) -> list[dict[str, Any]]:
        return [
            p for p in res.points if p["policy"] == policy and abs(p["load"] - rate / per) < 1e-9
        ]

    print("| policy | req/s | " + " | ".join(f"{m} p50 / p99, lab / sim" for m in MODELS) + " |")
    print("|---|---:|" + "---:|" * len(MODELS))
    for policy in POLICIES:
        for rate in rates:
            labs, pts = lab_runs(grid, policy, rate), points(policy, rate)
            cells = []
            for m in MODELS:
                lab = [statistics.fmean(r["load"]["models"][m]["latency_ms"][q] for r in labs)
                       for q in ("p50", "p99")]  # fmt: skip
                got = [statistics.fmean(p["services"][m][q] for p in pts) for q in ("p50", "p99")]
                cells.append(f"{lab[0]:.1f} / {got[0]:.1f}, {lab[1]:.1f} / {got[1]:.1f}")
            print(f"| {policy} | {rate:g} | " + " | ".join(cells) + " |")
    timelines = json.loads((grid / "timelines.json").read_text())
    print()
    print(
        "| policy | req/s | " + " | ".join(f"{m} batch, call ms, lab / sim" for m in MODELS) + " |"
    )
    print("|---|---:|" + "---:|" * len(MODELS))
    for policy in ("fifo", "sjf"):
        for level, rate in enumerate(rates):
            pts, cells = points(policy, rate), []
            for m in MODELS:
                batches = items = ms = 0.0
                for key, t in timelines.items():
                    if key.startswith(f"{policy}/L{level}-"):
                        for size, cell in t["models"][m].items():
                            batches += cell["batches"]
                            items += int(size) * cell["batches"]
                            ms += cell["mean_ms"] * cell["batches"]
                size = statistics.fmean(p["services"][m]["mean_batch_size"] for p in pts)
                call = statistics.fmean(p["services"][m]["call_ms"] for p in pts)
                cells.append(f"{items / batches:.2f} / {size:.2f}, {ms / batches:.2f} / {call:.2f}")
            print(f"| {policy} | {rate:g} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
