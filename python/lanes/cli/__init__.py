"""The ``lanes`` command line: ``lanes <command> [options]``.

Each subcommand is one module of this package exposing ``register(subparsers)``, which adds its
parser and sets ``handler`` — a function from the parsed arguments to an exit status. Adding a
command means adding its module and its name to :data:`COMMANDS`; modules are imported when the
parser is built, and a command's heavy imports stay inside its handler.

Every :class:`~lanes.errors.LanesError` ends the command with one line on stderr,
``lanes <command>: error: <message>``, and exit status 2 (as for argparse's own usage errors).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import os
import sys
from collections.abc import Sequence

from lanes.errors import LanesError

COMMANDS = (
    "serve", "sim", "bench", "bench_corpus", "bench_run", "probe", "arbiter", "zoo", "report",
    "demo", "fleet",
)  # fmt: skip
"""Subcommand modules under ``lanes.cli``, in the order ``lanes --help`` lists them."""

NESTED = {("bench", "corpus"): "bench-corpus", ("bench", "run"): "bench-run"}
"""Two-word commands and the parser each is routed to: ``lanes bench corpus`` shares its first
word with ``lanes bench URL``, which argparse cannot tell apart on its own."""

EXIT_ERROR = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 1  # as the Python docs advise for SIGPIPE


def version() -> str:
    """The installed distribution's version."""
    try:
        return importlib.metadata.version("lanes")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lanes",
        description="Online inference on shared GPUs: a host-wide shortest-job-first "
        "scheduler, its simulator, and a lab.",
    )
    parser.add_argument("--version", action="version", version=f"lanes {version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        module = importlib.import_module(f"lanes.cli.{name}")
        module.register(subparsers)
    # Routed commands are listed under their first word's help, not as commands of their own.
    hidden = set(NESTED.values())
    subparsers._choices_actions = [a for a in subparsers._choices_actions if a.dest not in hidden]
    return parser


def _name(args: argparse.Namespace) -> str:
    """The command as the user typed it, e.g. ``lanes sim`` or ``lanes bench corpus``."""
    return str(getattr(args, "display", f"lanes {args.command}"))


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``lanes`` with ``argv`` (default: ``sys.argv[1:]``) and return the exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    routed = NESTED.get(tuple(args_list[:2]))  # type: ignore[arg-type]
    if routed is not None:
        args_list = [routed, *args_list[2:]]
    parser = build_parser()
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exit_:  # --help, --version and usage errors
        code = exit_.code
        return 0 if code is None else code if isinstance(code, int) else EXIT_ERROR
    args.argv = args_list
    try:
        status: int = args.handler(args)
    except LanesError as err:
        print(f"{_name(args)}: error: {err.message}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:  # stdout closed early, e.g. `lanes sim | head`: not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        print(f"{_name(args)}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return status
