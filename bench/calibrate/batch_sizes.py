"""A model's batch sizes and each size's runtime call, lab against simulated.

Near the knee a model's tail is made where its lane falls behind and its batches grow to the
largest size: how often that happens and how long those batches take decide the p99 more than
any mean. For one model, at each level of a grid, per batch size: the share of the model's
requests served in batches of that size, and the mean wall time of those batches' runtime calls
— in the lab off the device timelines (each slice's ``batch_size`` and ``measured_ms``, all the
level's repeats), in the simulator off each service's ``batches`` (``lanes sim``'s per-size
figures, mean over seeds weighted by batches). Variants are simulated as against_demo.py
``--grid`` does (:data:`GRID_AS_SIMULATED`).

Run:  python bench/calibrate/batch_sizes.py GRID --scenario FILE --model NAME
      [--variants fifo,sjf] [--rates 600,800] [--seeds 5] [--requests 40000] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from against_demo import GRID_AS_SIMULATED
from compare import emit, scenario_rate
from default_question import with_threads
from replay import add_selection, variants_and_rates

from lanes import sim
from lanes._core import parse_policy
from lanes.sim.scenario import Scenario


@dataclass
class Sizes:
    """Per batch size: batches, and their calls' summed wall time (ms)."""

    batches: dict[int, float] = field(default_factory=dict)
    call_ms: dict[int, float] = field(default_factory=dict)

    def add(self, n: int, batches: float, call_ms_sum: float) -> None:
        self.batches[n] = self.batches.get(n, 0.0) + batches
        self.call_ms[n] = self.call_ms.get(n, 0.0) + call_ms_sum

    def share(self, n: int) -> float:
        """The share of the requests served in batches of ``n``."""
        total = sum(k * b for k, b in self.batches.items())
        return n * self.batches.get(n, 0.0) / total if total else 0.0

    def mean_call(self, n: int) -> float | None:
        b = self.batches.get(n, 0.0)
        return self.call_ms[n] / b if b else None


def lab(grid: Path, variant: str, rate: float, model: str) -> Sizes:
    """The level's repeats' batches of ``model`` off their device timelines."""
    out = Sizes()
    for path in sorted((grid / "runs" / variant).glob("L*-r*.json")):
        if path.name.endswith(".trace.json"):
            continue
        if float(json.loads(path.read_text())["offered"]["rate_rps"]) != rate:
            continue
        trace = json.loads(path.with_name(path.stem + ".trace.json").read_text())
        for ev in trace["traceEvents"]:
            args = ev.get("args", {})
            if ev.get("ph") == "X" and args.get("model") == model and "measured_ms" in args:
                out.add(int(args["batch_size"]), 1, float(args["measured_ms"]))
    return out


def simulated(
    scenario: Scenario, variant: str, rate: float, model: str, seeds: int, requests: int
) -> Sizes:
    """The simulator's batches of ``model`` (its ``batches`` per size, summed over seeds)."""
    policy, threads = GRID_AS_SIMULATED[variant]
    res = sim.run(
        with_threads(scenario, threads),
        [parse_policy(policy)],
        [rate / scenario_rate(scenario)],
        seeds=list(range(1, seeds + 1)),
        requests=requests,
    )
    out = Sizes()
    for point in res.points:
        per_size: dict[str, Any] = point["services"][model]["batches"]
        for n, t in per_size.items():
            out.add(int(n), t["batches"], t["call_ms"] * t["batches"])
    return out


def rates_of(grid: Path, variant: str) -> list[float]:
    return sorted(
        {
            float(json.loads(p.read_text())["offered"]["rate_rps"])
            for p in (grid / "runs" / variant).glob("L*-r*.json")
            if not p.name.endswith(".trace.json")
        }
    )


def table(got: Sizes, want: Sizes) -> list[str]:
    """Per size: the share of requests and the mean call, lab / simulated."""

    def ms(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}"

    rows = [
        "| batch size | share of requests, lab / sim | call ms, lab / sim |",
        "|---:|---:|---:|",
    ]
    for n in sorted(set(got.batches) | set(want.batches)):
        rows.append(
            f"| {n} | {got.share(n):.3f} / {want.share(n):.3f} | "
            f"{ms(got.mean_call(n))} / {ms(want.mean_call(n))} |"
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("grid", type=Path, help="a calibration grid (its runs' .trace.json)")
    ap.add_argument("--scenario", type=Path, required=True)
    ap.add_argument("--model", required=True)
    add_selection(ap)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--requests", type=int, default=40_000)
    ap.add_argument("--markdown", type=Path, default=None)
    args = ap.parse_args(argv)
    variants, rates = variants_and_rates(ap, args)
    scenario = Scenario.load(args.scenario)
    if args.model not in {s.name for s in scenario.services}:
        ap.error(f"--model {args.model}: {args.scenario} has no such service")
    out = [f"{args.model}'s batches, {args.grid} against {args.scenario}; {args.seeds} seeds"]
    for variant in variants:
        if not (args.grid / "runs" / variant).is_dir():
            ap.error(f"{args.grid} holds no runs of {variant}")
        for rate in rates_of(args.grid, variant):
            if rates is not None and rate not in rates:
                continue
            got = lab(args.grid, variant, rate, args.model)
            want = simulated(scenario, variant, rate, args.model, args.seeds, args.requests)
            out += ["", f"**{variant} at {rate:.0f} req/s**", "", *table(got, want)]
    return emit("\n".join(out) + "\n", args.markdown)


if __name__ == "__main__":
    raise SystemExit(main())
