"""``lanes bench run EXPERIMENT.toml``: run a lab experiment, then aggregate it.

Reached as ``lanes bench run ...`` (the top-level parser routes it here). Runs every variant x
level x repeat of the experiment (:mod:`lanes.lab.runner`) with a progress bar, writes one JSON
file per run under ``--out``, then ``summary.json`` (:mod:`lanes.lab.aggregate`). The results
folder format is in docs/lab.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

PROG = "lanes bench run"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "bench-run",
        prog=PROG,
        description="Run a lab experiment: every variant (a server command or URL) at every "
        "load level, repeated, variants interleaved; one JSON file per run, summary.json at "
        "the end. Format: docs/lab.md.",
    )
    p.add_argument("experiment", type=Path, metavar="EXPERIMENT.toml")
    add_run_options(p, default_out=None)
    p.add_argument(
        "--variants",
        metavar="NAME,...",
        help="run only these variants (comma-separated, as named in the file)",
    )
    p.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="generate the load from a Ray cluster's nodes ('auto' or HOST:PORT; overrides "
        "the file's [cluster] ray; needs lanes[ray]; docs/lab.md)",
    )
    p.set_defaults(handler=handle, display=PROG)


def add_run_options(
    p: argparse.ArgumentParser, default_out: Path | None, where: str | None = None
) -> None:
    """The options ``lanes bench run`` and ``lanes demo`` share; ``where`` says the default
    results folder in the help."""
    from lanes.cli.bench import positive_int

    if where is None:
        where = f"default {default_out}" if default_out else "default lanes-lab/NAME"
    p.add_argument(
        "--out", type=Path, default=default_out, metavar="DIR", help=f"results ({where})"
    )
    p.add_argument("--resume", action="store_true", help="skip runs whose result file exists")
    p.add_argument("--repeats", type=positive_int, metavar="N", help="override the repeats")
    p.add_argument("--quick", action="store_true", help="one repeat, three levels")
    p.add_argument(
        "--order",
        metavar="rotate|fixed",
        help="variants per repeat: rotate (repeat r starts at the r-th variant; the default) "
        "or fixed (the file's order); overrides the file's order",
    )


def execute(exp_path: Path | None, text: str, args: argparse.Namespace) -> Path:
    """Validate, run with a progress bar, aggregate; returns the results folder."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from lanes.lab.experiment import parse_experiment
    from lanes.lab.runner import run_experiment, summarize

    exp = parse_experiment(text, source=exp_path)
    if args.quick:
        exp = exp.quick()
    if args.repeats is not None:
        exp = exp.with_repeats(args.repeats)
    if getattr(args, "order", None) is not None:
        exp = exp.with_order(args.order)
    if getattr(args, "variants", None) is not None:
        exp = exp.with_variants(args.variants.split(","))
    if getattr(args, "ray", None) is not None:
        exp = exp.with_ray(args.ray)
    out: Path = args.out if args.out is not None else Path("lanes-lab") / exp.name
    columns: list[Any] = [
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    ]
    with Progress(*columns, transient=False) as bar:
        task = bar.add_task(exp.name, total=None)

        def progress(run_id: str, done: int, total: int) -> None:
            bar.update(task, description=f"{exp.name} {run_id}", completed=done, total=total)

        run_experiment(exp, out, text, resume=args.resume, progress=progress)
    summarize(out)
    return out


def handle(args: argparse.Namespace) -> int:
    from lanes.errors import EXPERIMENT_INVALID, LanesError

    try:
        text = args.experiment.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise LanesError(EXPERIMENT_INVALID, f"{args.experiment}: cannot read: {err}") from None
    out = execute(args.experiment, text, args)
    print_diagnosis(out / "summary.json")
    print(f"results in {out}")
    return 0


def print_diagnosis(path: Path) -> None:
    """The findings and the cost of profiling of ``summary.json``, when runs were profiled."""
    import json

    from lanes.lab.diagnosis import text_lines

    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    for line in text_lines(summary.get("diagnosis") or {}):
        print(line)
    for b in summary.get("behind") or []:  # [cluster]: runs left out of the figures
        print(f"left out, the load generators fell behind: {b['id']}: {'; '.join(b['reasons'])}")
    from lanes.lab.report import late_line

    late = late_line(summary) if summary.get("variants") else None
    if late:
        print(late)
    from lanes.lab.report import disturbed_line

    noisy = disturbed_line(summary)
    if noisy:
        print(noisy)
    from lanes.lab.report import slow_host_line

    slow = slow_host_line(summary)
    if slow:
        print(slow)
    from lanes.lab.report import stopped_line

    stopped = stopped_line(summary)
    if stopped:
        print(stopped)
