"""``lanes demo``: the built-in experiment on the built-in model zoo, then its report.

Runs the embedded experiment (``lanes/lab/demo.toml``: the demo zoo's OCR mix served by ``lanes
serve`` as ``independent``, ``fifo``, ``sjf`` and its default policy, five levels, three repeats,
then a bisection of each repeat's capacity) with ``lanes bench run``'s runner, writes
``summary.json`` and ``report.html`` into ``--out`` (default ``lanes-demo/``) and prints the summary
table and the headline: each variant's capacity at SLO and its goodput against the baseline's, with
95 % intervals (:mod:`lanes.lab.headline`). ``--quick``: one repeat, three levels. ``--sim``: the
same comparison on the simulator (:mod:`lanes.lab.simdemo`), in seconds, written into ``--out``
(default ``lanes-demo-sim/``) as ``sim.json``, ``summary.json`` and ``report.html``; ``--repeats N``
sets its seeds. ``--profile``: the diagnosis too (:mod:`lanes.diagnose`), at the middle level in the
first repeat, its findings and flame graphs in the report.
"""

from __future__ import annotations

import argparse
import json
import shlex
from importlib import resources
from pathlib import Path
from typing import Any

GPU_LIKE_TWIN = "independent-gpu-like"
"""The demo's variant that is ``independent`` itself on a CUDA host (``--devices gpu-like`` means
every CUDA GPU there, as ``auto`` does): run once, not twice, where ONNX Runtime sees a GPU."""
DEFAULT_TWIN = "default"
"""The demo's variant that is ``lanes serve``'s default policy (``auto``), which is ``sjf``
itself on a CUDA host (lanes.serving.default_policy): not run twice there either."""
TWINS = (GPU_LIKE_TWIN, DEFAULT_TWIN)
DEFAULT_OUT = Path("lanes-demo")
DEFAULT_SIM_OUT = Path("lanes-demo-sim")
SIM_SEEDS = 2


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from lanes.cli.bench_run import add_run_options

    p = subparsers.add_parser(
        "demo",
        help="compare independent, fifo, sjf and the default policy serving the demo zoo on this "
        "host (the lab)",
        description="Run the built-in experiment: the demo zoo's OCR mix under independent "
        "(the status quo, and on GPU-like devices: --devices gpu-like), fifo, sjf and lanes "
        "serve's default policy (auto; on a GPU host it is sjf, and not run twice), five load "
        "levels, three repeats, a capacity search (about 14 minutes on 2 cores); write "
        "report.html and summary.json and print the summary, the headline (capacity at SLO, "
        "goodput ratios, 95 % intervals) and which variants lead. Guide: docs/lab.md.",
    )
    add_run_options(
        p, default_out=None, where=f"default {DEFAULT_OUT}, {DEFAULT_SIM_OUT} with --sim"
    )
    p.add_argument(
        "--sim",
        action="store_true",
        help=f"the simulator instead (lanes sim ocr, {SIM_SEEDS} seeds or --repeats): seconds",
    )
    p.add_argument(
        "--profile",
        action="store_true",
        help="diagnose too: profile each variant at 300 req/s in the first repeat (stacks, "
        "syscalls, CPU per core, threads) and add the findings to the report "
        "(docs/diagnosis.md)",
    )
    p.set_defaults(handler=handle)


PROFILE_TABLE = """
# lanes demo --profile: diagnosis at the middle level, first repeat only (the other repeats
# measure the same level unprofiled: the cost of profiling).
[profile]
levels = [300]
repeats = [1]
"""


def demo_text() -> str:
    """The embedded experiment file."""
    return resources.files("lanes.lab").joinpath("demo.toml").read_text(encoding="utf-8")


def variants_for(text: str, cuda_devices: int) -> str | None:
    """The variants to run (``--variants``' form), or None for every one: on a host where ONNX
    Runtime sees a CUDA GPU every variant but the :data:`TWINS`."""
    if cuda_devices == 0:
        return None
    from lanes.lab.experiment import parse_experiment

    names = [v.name for v in parse_experiment(text, source=None).variants]
    return ",".join(n for n in names if n not in TWINS)


def handle(args: argparse.Namespace) -> int:
    if args.sim:
        return _sim(args)
    from lanes.cli.bench_run import execute, print_diagnosis

    if args.out is None:
        args.out = DEFAULT_OUT
    text = demo_text() + (PROFILE_TABLE if args.profile else "")
    from lanes.serving.devices import cuda_count

    args.variants = variants_for(text, cuda_count())
    if args.variants is not None:
        print(
            f"a CUDA host: {GPU_LIKE_TWIN} is independent itself here, and {DEFAULT_TWIN} is "
            "sjf; neither is run twice"
        )
    out = execute(None, text, args)
    try:
        from lanes.lab.report import build_report

        flags = (" --quick" if args.quick else "") + (" --profile" if args.profile else "")
        files = build_report(out, command="lanes demo" + flags)
        print(f"report: {files.html}")
    except ImportError:
        pass
    print_summary(out / "summary.json")
    print_diagnosis(out / "summary.json")
    return 0


def _sim(args: argparse.Namespace) -> int:
    from lanes.lab.simdemo import run_sim_demo
    from lanes.sim.table import print_results

    out: Path = args.out if args.out is not None else DEFAULT_SIM_OUT
    command = shlex.join(["lanes", *getattr(args, "argv", ["demo", "--sim"])])
    results = run_sim_demo(out, args.repeats or SIM_SEEDS, command)
    print_results(results)
    print_headline(json.loads((out / "summary.json").read_text(encoding="utf-8")))
    print(
        f"report: {out / 'report.html'}; summary: {out / 'summary.json'}; all points: "
        f"{out / 'sim.json'}"
    )
    return 0


def print_summary(path: Path) -> None:
    """The summary table of ``summary.json`` (rich), one row per variant and level, then the
    headline."""
    from rich.table import Table

    from lanes.sim.table import make_console

    if not path.exists():
        return
    summary: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    slo = summary.get("slo_ms")
    table = Table(title=f"{summary.get('experiment', '')} — SLO {slo:g} ms" if slo else None)
    columns = ("variant", "offered/s", "achieved/s", "goodput/s", "p50 ms", "p99 ms", "SLO att.")
    for col in (*columns, "grid capacity"):
        table.add_column(col, justify="left" if col == "variant" else "right")
    for name, v in summary["variants"].items():
        cap = v.get("capacity_at_slo")
        for i, lv in enumerate(v["levels"]):
            table.add_row(
                name if i == 0 else "",
                _fmt(lv.get("offered_rps") or lv.get("concurrency"), "{:g}"),
                _fmt(lv.get("achieved_rps"), "{:.1f}"),
                _fmt(lv.get("goodput_rps"), "{:.1f}"),
                _fmt(lv["latency_ms"].get("p50"), "{:.1f}"),
                _fmt(lv["latency_ms"].get("p99"), "{:.1f}"),
                _fmt(lv.get("slo_attainment"), "{:.1%}"),
                (_fmt(cap, "{:g}") if cap is not None else "none") if i == 0 else "",
            )
    make_console().print(table)
    print_headline(summary)
    print(f"baseline: {summary.get('baseline')}; summary: {path}")


def print_headline(summary: dict[str, Any]) -> None:
    """The headline (:mod:`lanes.lab.headline`): capacity at SLO and goodput against the
    baseline, with 95 % intervals over repeats."""
    from rich.table import Table

    from lanes.lab.headline import headline, leaders
    from lanes.sim.table import make_console

    head = headline(summary)
    steps = f"{head.steps} bisection steps" if head.steps else "no bisection"
    title = (
        f"capacity at SLO (>= 99 % within {summary.get('slo_ms'):g} ms; {steps}); mean "
        "[95 % CI] over repeats, ratios paired by repeat"
    )
    table = Table(title=title)
    for i, col in enumerate(head.columns):
        table.add_column(col, justify="left" if i == 0 else "right")
    for row in head.rows:
        table.add_row(*row)
    make_console().print(table)
    line = leaders(summary)
    if line is not None:
        print(line)


def _fmt(value: object, pattern: str) -> str:
    return "-" if value is None else pattern.format(value)
