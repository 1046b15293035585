"""The client's part of a lab run's latency: a ``lanes bench run`` that keeps its send delays.

A lab run file (docs/lab.md) keeps each run's latency, measured from the *intended* send time
(docs/bench.md: no coordinated omission), but not the load generators' *send delay* (intended to
sent: how far the client fell behind its schedule, on the same two cores as the server) nor the
*service time* (sent to done). This runs ``lanes bench run EXPERIMENT --out DIR`` as usual, with
``lanes.lab.generators.launch`` wrapped to write, beside each run file, ``runs/VARIANT/
STEM.client.json``: the run's generators merged (``latency_ms``, ``service_time_ms``,
``send_delay_ms``, ``late_sends_fraction``) and the same per model. Nothing else changes: the
run files, traces and summary are those of ``lanes bench run``. Then, per variant and level,
the mean over repeats of each quantity's p50 and p99 (``--report DIR``).

The simulator's arrival is the intended time: whatever the client adds before the send and after
the reply is in the lab's latency and nowhere in the model but the wake-ups (``host.handoff_ms``).

Run (hold the bench lock):  python bench/calibrate/client.py EXPERIMENT.toml --out DIR
      python bench/calibrate/client.py --report DIR [--markdown OUT.md]
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from compare import emit  # beside this file

import lanes.lab.generators as generators
import lanes.lab.runner as runner
from lanes.bench.result import Result, merge

KEYS = ("latency_ms", "service_time_ms", "send_delay_ms")
CURRENT: dict[str, Any] = {}
"""The run being measured (set by the wrapped ``runner.measure``)."""


def figures(r: Result) -> dict[str, Any]:
    """What the client file keeps of one (merged) result."""
    d = r.data
    out = {k: d[k] for k in KEYS if k in d}
    out["late_sends_fraction"] = d.get("late_sends_fraction")
    return out


def install() -> None:
    """Wrap ``runner.measure`` (to know the run) and ``generators.launch`` (to keep its
    results)."""
    measure, launch = runner.measure, generators.launch

    def measure_kept(exp: Any, key: Any, srv: Any, *args: Any, **kwargs: Any) -> Any:
        CURRENT["key"], CURRENT["out"] = key, args[2]
        return measure(exp, key, srv, *args, **kwargs)

    def launch_kept(specs: Sequence[dict[str, Any]], deadline_s: float) -> list[Result]:
        results = launch(specs, deadline_s)
        key, out = CURRENT["key"], Path(CURRENT["out"])
        models = [s.get("model", str(i)) for i, s in enumerate(specs)]
        by_model: dict[str, list[Result]] = {}
        for m, r in zip(models, results, strict=True):
            by_model.setdefault(m, []).append(r)
        doc = {
            "all": figures(merge(results)),
            "models": {
                m: figures(rs[0] if len(rs) == 1 else merge(rs)) for m, rs in by_model.items()
            },
        }
        path = out / "runs" / key.variant / f"{key.stem}.client.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1) + "\n")
        return results

    runner.measure = measure_kept
    generators.launch = launch_kept


def report(results: Path) -> str:
    """Per variant and level: mean over repeats of p50 / p99 of latency, service time and send
    delay (ms), and of the late share."""
    groups: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for path in sorted(results.glob("runs/*/L*-r*.client.json")):
        run = json.loads(path.with_name(path.name.replace(".client", "")).read_text())
        key = (run["variant"], run["offered"]["rate_rps"])
        groups.setdefault(key, []).append(json.loads(path.read_text())["all"])
    lines = [
        "| variant | req/s | runs | latency p50 / p99 | service time p50 / p99 | send delay p50 / "
        "p99 / max | late sends (> 1 ms) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for (variant, rate), docs in sorted(groups.items()):

        def mean(k: str, q: str, docs: list[dict[str, Any]] = docs) -> float:
            return statistics.fmean(d[k][q] for d in docs)

        late = statistics.fmean(d["late_sends_fraction"] or 0.0 for d in docs)
        lines.append(
            f"| {variant} | {rate:.0f} | {len(docs)} | {mean('latency_ms', 'p50'):.2f} / "
            f"{mean('latency_ms', 'p99'):.1f} | {mean('service_time_ms', 'p50'):.2f} / "
            f"{mean('service_time_ms', 'p99'):.1f} | {mean('send_delay_ms', 'p50'):.3f} / "
            f"{mean('send_delay_ms', 'p99'):.2f} / {mean('send_delay_ms', 'max'):.1f} | "
            f"{late:.2%} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("experiment", nargs="?", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--report", type=Path, help="summarise a folder this script wrote")
    ap.add_argument("--markdown", type=Path)
    args = ap.parse_args(argv)
    if args.report:
        return emit(report(args.report), args.markdown)
    if args.experiment is None or args.out is None:
        ap.error("give EXPERIMENT.toml and --out DIR, or --report DIR")
    install()
    from lanes.cli import main as lanes_main

    return int(lanes_main(["bench", "run", str(args.experiment), "--out", str(args.out)]) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
