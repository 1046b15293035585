"""``lanes report``: the HTML report, charts and ``summary.json`` of a lab results folder.

The results folder is what ``lanes bench run`` or ``lanes demo`` wrote (docs/lab.md); a folder of
``lanes demo --sim`` (``sim.json``, no ``runs/``) gets its page written again from its summary
(:func:`lanes.lab.simdemo.rebuild_report`), against ``--baseline`` if given. Everything
is checked first (the folder and its runs, the baseline, the level, the output path, matplotlib);
then the summary, the charts and the page are written atomically and their paths printed.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

from lanes.errors import BAD_ARGUMENT, LanesError

_EPILOG = """\
examples:
  lanes report lanes-demo/                         report.html, summary.json, charts/*.png
  lanes report results/ --baseline fifo --out /tmp/ocr.html --level 3

The page opens offline (charts embedded). Results folder format and the report: docs/lab.md.
"""


def register(subparsers: Any) -> None:
    """Add the ``report`` subcommand to ``subparsers``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "report",
        help="write the HTML report of a lab results folder",
        description="Aggregate a lab results folder (mean and 95 % CI over repeats, capacity at\n"
        "SLO, ratios to a baseline) into summary.json, draw the charts into charts/, and\n"
        "write one self-contained HTML report. Guide: docs/lab.md.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("results", type=Path, metavar="RESULTS_DIR", help="the results folder")
    parser.add_argument(
        "--baseline",
        metavar="NAME",
        help="the variant the others are compared to (default: the experiment's baseline, "
        "else independent, else the first variant)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="the HTML file to write (default: RESULTS_DIR/report.html)",
    )
    parser.add_argument(
        "--level",
        type=int,
        metavar="N",
        help="load level index (0-based) whose timelines the density chart shows "
        "(default: the highest level with a timeline)",
    )
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    """Run ``lanes report`` with parsed ``args``; errors are raised as ``LanesError``."""
    from lanes.lab.report import build_report
    from lanes.lab.simdemo import is_sim_folder, rebuild_report

    if is_sim_folder(args.results):
        if args.level is not None:
            where = f"{args.results} is a simulated demo (no timelines)"
            raise LanesError(BAD_ARGUMENT, f"--level {args.level}: {where}")
        page, summary = rebuild_report(args.results, baseline=args.baseline, out=args.out)
        print(f"wrote {page}")
        if args.baseline is not None:
            print(f"wrote {summary}")
        return 0
    command = shlex.join(["lanes", *getattr(args, "argv", ["report", str(args.results)])])
    files = build_report(
        args.results, baseline=args.baseline, out=args.out, level=args.level, command=command
    )
    for path in (files.html, files.summary, *files.charts):
        print(f"wrote {path}")
    return 0
