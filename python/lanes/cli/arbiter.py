"""``lanes arbiter --socket PATH --devices SPEC``: one scheduler for every process on a GPU host.

Runs the arbiter daemon (crates/lanes-arbiter) in this process: clients connect to the Unix
socket, ask for a device slot per batch and give it back when done; the policy engine decides
every grant. Log lines go to stderr. SIGTERM or Ctrl-C stops it: queued acquires are answered
REJECT(shutting_down), the socket is removed and the timeline (``--trace``) written. The guide is
docs/arbiter.md; the wire protocol docs/arbiter-protocol.md.
"""

from __future__ import annotations

import argparse
import contextlib
import grp
import pwd
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from lanes.cli.bench import positive_int
from lanes.cli.probe import port
from lanes.errors import BAD_ARGUMENT, LanesError

if TYPE_CHECKING:
    from lanes._core import ArbiterRun

EXIT_INTERRUPTED = 130
_POLL_S = 0.2
"""Longest wait between two looks for signals while the daemon runs."""


def octal_mode(text: str) -> int:
    """``"0660"`` or ``"660"`` → 0o660; permission bits only."""
    try:
        value = int(text, 8)
    except ValueError:
        value = -1
    if not 0 <= value <= 0o777:
        raise argparse.ArgumentTypeError(f"{text!r} is not an octal mode 000-777, e.g. 0660")
    return value


def milliseconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be milliseconds > 0, e.g. 500")
    return value


def metrics_port(text: str) -> int | None:
    """A port number, or ``off``."""
    return None if text == "off" else port(text)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "arbiter",
        help="run the per-host GPU arbiter daemon on a Unix socket",
        description="Grant device slots to every process of this host through one policy "
        "engine, so services in any language share GPUs without overlapping work on a device. "
        "Clients speak the binary protocol of docs/arbiter-protocol.md (lanes.arbiter.Client, "
        "clients/c).",
        epilog="DEVICES: cuda:0,cuda:1 · sim:N · cpu or cpu:N. The daemon never runs work: the "
        "names are labels clients see in WELCOME (index = device number).",
    )
    p.add_argument("--socket", type=Path, required=True, metavar="PATH", help="the Unix socket")
    p.add_argument(
        "--devices", required=True, metavar="SPEC", help="devices to arbitrate, as lanes serve"
    )
    p.add_argument(
        "--capacity", type=positive_int, default=1, metavar="N", help="jobs per device (default 1)"
    )
    p.add_argument(
        "--policy",
        default="sjf",
        metavar="NAME",
        help="fifo, limit:K, sjf[:alpha=A,slack=MS|off,starve=MS|off], "
        "fair[:...,threshold=MS,cap=MS,usage=MS|off,fast=MS|off,...], "
        "lanes[:...,fast=MS,hold=MS,budget=MS|off,burst=MS|off,width=K,beside=long|any], edf "
        "(default sjf)",
    )
    p.add_argument(
        "--max-hold",
        type=milliseconds,
        metavar="MS",
        help="log and count grants held longer than this (default: no limit)",
    )
    p.add_argument(
        "--revoke", action="store_true", help="take back grants held past --max-hold (REVOKED)"
    )
    p.add_argument(
        "--queue-limit",
        type=positive_int,
        default=100_000,
        metavar="N",
        help="most acquires queued at once; more are rejected (overload) (default 100000)",
    )
    p.add_argument(
        "--mode", type=octal_mode, default=0o660, metavar="OCTAL", help="socket mode (default 0660)"
    )
    p.add_argument("--owner", metavar="USER", help="owner of the socket (name or uid)")
    p.add_argument("--group", metavar="GROUP", help="group of the socket (name or gid)")
    p.add_argument(
        "--metrics-port",
        type=metrics_port,
        default=None,
        metavar="N|off",
        help="serve Prometheus metrics on 127.0.0.1:N (0: any free port) (default off)",
    )
    p.add_argument(
        "--metrics-host", default="127.0.0.1", metavar="IP", help="metrics address (127.0.0.1)"
    )
    p.add_argument(
        "--trace", type=Path, metavar="FILE", help="write the device timeline (Chrome trace) here"
    )
    p.add_argument(
        "--threads",
        type=positive_int,
        default=1,
        metavar="N",
        help="event-loop threads; 1 = a single-threaded loop (default 1)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no info lines on stderr")
    p.set_defaults(handler=handle)


def _uid(owner: str) -> int:
    if owner.isdigit():
        return int(owner)
    try:
        return pwd.getpwnam(owner).pw_uid
    except KeyError:
        raise LanesError(BAD_ARGUMENT, f"--owner '{owner}': no such user") from None


def _gid(group: str) -> int:
    if group.isdigit():
        return int(group)
    try:
        return grp.getgrnam(group).gr_gid
    except KeyError:
        raise LanesError(BAD_ARGUMENT, f"--group '{group}': no such group") from None


def spec(args: argparse.Namespace) -> dict[str, Any]:
    """The native spec for ``args``, with devices validated as ``lanes serve`` does."""
    from lanes.serving.devices import gpu_count, parse_devices

    # The daemon runs nothing: a cuda:N needs the GPU on this host, not a CUDA runtime here.
    devices = [d.name for d in parse_devices(args.devices, cuda_available=gpu_count)]
    if args.revoke and args.max_hold is None:
        raise LanesError(BAD_ARGUMENT, "--revoke needs --max-hold MS")
    return {
        "socket": str(args.socket),
        "devices": devices,
        "capacity": args.capacity,
        "policy": args.policy,
        "max_hold_ms": args.max_hold,
        "revoke": args.revoke,
        "queue_limit": args.queue_limit,
        "mode": args.mode,
        "uid": None if args.owner is None else _uid(args.owner),
        "gid": None if args.group is None else _gid(args.group),
        "metrics": None
        if args.metrics_port is None
        else f"{args.metrics_host}:{args.metrics_port}"
        if ":" not in args.metrics_host
        else f"[{args.metrics_host}]:{args.metrics_port}",
        "trace": None if args.trace is None else str(args.trace),
        "threads": args.threads,
    }


@contextmanager
def _signals(runs: list[ArbiterRun], stopped: list[str]) -> Iterator[None]:
    """SIGTERM stops (recorded in ``stopped``); the old handler comes back after.

    Installed before the daemon starts, so a SIGTERM sent as soon as the socket accepts is never
    the default (death by signal): one that comes before the run is in ``runs`` is only
    recorded, and the caller stops the run when it sees ``stopped`` after adding it."""

    def term(signum: int, frame: FrameType | None) -> None:
        stopped.append("terminated")
        for run in runs:
            run.stop()

    old: Any = None
    with contextlib.suppress(ValueError):  # not the main thread: no signal handling
        old = signal.signal(signal.SIGTERM, term)
    try:
        yield
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)


def handle(args: argparse.Namespace) -> int:
    from lanes import _core

    def err(line: str) -> None:
        print(f"lanes arbiter: {line}", file=sys.stderr, flush=True)

    stopped: list[str] = []
    runs: list[ArbiterRun] = []

    def drain(timeout_s: float) -> None:
        line = run.notice(timeout_s)
        while line is not None:
            if not args.quiet or line.startswith(("grant", "connection")):
                err(line)
            line = run.notice(0.0)

    with _signals(runs, stopped):
        run = _core.arbiter_start(spec(args))
        runs.append(run)
        if stopped:  # a SIGTERM while it started
            run.stop()
        if not args.quiet:
            err(f"listening on {args.socket} ({args.devices}, policy {args.policy})")
            address = run.metrics_address
            if address is not None:
                host, bound = address
                err(f"metrics on http://{host if ':' not in host else f'[{host}]'}:{bound}/metrics")
        try:
            while not run.wait(0.0):
                drain(_POLL_S)
        except KeyboardInterrupt:
            stopped.append("interrupted")
            run.stop()
            run.wait(10.0)
    drain(0.0)
    run.result()
    if stopped and not args.quiet:
        err(f"{stopped[0]}: stopped")
    return EXIT_INTERRUPTED if stopped[:1] == ["interrupted"] else 0
