"""``lanes demo``: the built-in experiment on the built-in model zoo, then its report.

Runs the embedded experiment (``lanes/lab/demo.toml``: the demo zoo's OCR mix served by
``lanes serve`` as ``independent``, ``fifo`` and ``sjf``, five levels, three repeats) with
``lanes bench run``'s runner, writes ``summary.json`` and ``report.html`` into ``--out``
(default ``lanes-demo/``) and prints the summary table. ``--quick``: one repeat, three levels.
``--sim``: the same comparison on the simulator (``lanes sim ocr``), in seconds.
"""

from __future__ import annotations

import argparse
import json
from importlib import resources
from pathlib import Path
from typing import Any

DEFAULT_OUT = Path("lanes-demo")
SIM_ARGS = ["sim", "ocr", "--policies", "independent,fifo,sjf", "--loads", "0.5,0.7,0.8,0.9"]
SIM_ARGS += ["--seeds", "2", "--requests", "50000", "--capacity"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from lanes.cli.bench_run import add_run_options

    p = subparsers.add_parser(
        "demo",
        help="compare independent, fifo and sjf serving the demo zoo on this host (the lab)",
        description="Run the built-in experiment: the demo zoo's OCR mix under independent, "
        "fifo and sjf, five load levels, three repeats (about 6 minutes on 2 cores); write "
        "report.html and summary.json and print the summary. Guide: docs/lab.md.",
    )
    add_run_options(p, default_out=DEFAULT_OUT)
    p.add_argument(
        "--sim", action="store_true", help="the simulator instead (lanes sim ocr): seconds"
    )
    p.set_defaults(handler=handle)


def demo_text() -> str:
    """The embedded experiment file."""
    return resources.files("lanes.lab").joinpath("demo.toml").read_text(encoding="utf-8")


def handle(args: argparse.Namespace) -> int:
    if args.sim:
        from lanes.cli import main

        return main(SIM_ARGS)
    from lanes.cli.bench_run import execute

    out = execute(None, demo_text(), args)
    try:
        from lanes.lab.report import build_report

        files = build_report(out, command="lanes demo" + (" --quick" if args.quick else ""))
        print(f"report: {files.html}")
    except ImportError:
        pass
    print_summary(out / "summary.json")
    return 0


def print_summary(path: Path) -> None:
    """The summary table of ``summary.json`` (rich), one row per variant and level."""
    from rich.console import Console
    from rich.table import Table

    if not path.exists():
        return
    summary: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    slo = summary.get("slo_ms")
    table = Table(title=f"{summary.get('experiment', '')} — SLO {slo:g} ms" if slo else None)
    for col in ("variant", "offered/s", "achieved/s", "p50 ms", "p99 ms", "SLO att.", "capacity"):
        table.add_column(col, justify="left" if col == "variant" else "right")
    for name, v in summary["variants"].items():
        cap = v.get("capacity_at_slo")
        for i, lv in enumerate(v["levels"]):
            table.add_row(
                name if i == 0 else "",
                _fmt(lv.get("offered_rps") or lv.get("concurrency"), "{:g}"),
                _fmt(lv.get("achieved_rps"), "{:.1f}"),
                _fmt(lv["latency_ms"].get("p50"), "{:.1f}"),
                _fmt(lv["latency_ms"].get("p99"), "{:.1f}"),
                _fmt(lv.get("slo_attainment"), "{:.1%}"),
                (_fmt(cap, "{:g}") if cap is not None else "none") if i == 0 else "",
            )
    Console().print(table)
    print(f"baseline: {summary.get('baseline')}; summary: {path}")


def _fmt(value: object, pattern: str) -> str:
    return "-" if value is None else pattern.format(value)
