"""``lanes probe TARGETS``: which services of a fleet accept connections, every second.

Events (state transitions, and every target's initial state after the first round) go to stdout,
one per line: readable text, or with ``--json`` one JSON object
``{"target", "name", "state", "previous", "at"}``. Log lines and warnings go to stderr, round
summaries too with ``-v``. SIGHUP reloads the targets file (it is also reloaded when it changes);
Ctrl-C or SIGTERM stops cleanly. The engine is crates/lanes-probe; the guide is docs/probe.md.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from lanes.cli.bench import positive_int, seconds

if TYPE_CHECKING:
    from lanes.probe import Run

EXIT_INTERRUPTED = 130
_POLL_S = 0.2
"""Longest wait between two looks for signals while the prober runs."""

_SIZE = re.compile(r"^\s*([0-9]+)\s*([kmg]i?b?|b)?\s*$", re.IGNORECASE)
_FACTORS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def byte_size(text: str) -> int:
    """``"65536"`` → 65536, ``"64k"`` → 65536, ``"4M"`` → 4194304 (binary units)."""
    m = _SIZE.match(text)
    if m is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size; use e.g. 65536, 64k, 4M")
    unit = (m.group(2) or "").lower()[:1]
    return int(m.group(1)) * _FACTORS[unit]


def port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} must be in 0-65535")
    return value


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "probe",
        help="health-probe a fleet of host:port targets every second (half-open SYN probes)",
        description="Probe every target of a file each interval and report state changes: "
        "up (accepts connections), down (no answer after --down-after consecutive failures), "
        "refused (the port answers with a reset). syn mode sends half-open SYN probes from a "
        "raw socket and reads replies from a kernel-filtered packet socket (needs CAP_NET_RAW; "
        "falls back to connect mode without it); connect mode makes a plain connect per probe.",
        epilog="TARGETS: one 'host:port [name]' per line; '#' starts a comment. The file is "
        "reloaded when it changes and on SIGHUP. Times take units: 1s, 500ms, 2m.",
    )
    p.add_argument("targets", type=Path, metavar="TARGETS", help="the targets file")
    probe = p.add_argument_group("probing")
    probe.add_argument(
        "--interval",
        type=seconds,
        default=1.0,
        metavar="TIME",
        help="time between rounds, 10ms-1h (default 1s)",
    )
    probe.add_argument(
        "--timeout",
        type=seconds,
        metavar="TIME",
        help="how long a probe waits for its answer (default: 80%% of the interval, at most 1s)",
    )
    probe.add_argument(
        "--mode",
        choices=("syn", "connect"),
        default="syn",
        help="syn: half-open probes (needs CAP_NET_RAW); connect: full connects (default syn)",
    )
    probe.add_argument(
        "--down-after",
        type=positive_int,
        default=3,
        metavar="N",
        help="consecutive failures before an up target is reported down (default 3)",
    )
    probe.add_argument(
        "--up-after",
        type=positive_int,
        default=2,
        metavar="M",
        help="consecutive successes before a failing target is reported up; doubled for "
        "each further flap within --flap-window, up to 8 times (default 2)",
    )
    probe.add_argument(
        "--flap-window",
        type=positive_int,
        default=60,
        metavar="ROUNDS",
        help="rounds a flap is remembered by the damping rule (default 60)",
    )
    probe.add_argument(
        "--rounds",
        type=positive_int,
        metavar="N",
        help="stop after this many rounds (default: run until stopped)",
    )
    probe.add_argument(
        "--recv-buffer",
        type=byte_size,
        metavar="BYTES",
        help="receive buffer of the reply socket, e.g. 64k, 16M (default: sized for the fleet)",
    )
    probe.add_argument(
        "--connect-concurrency",
        type=positive_int,
        metavar="N",
        help="most connects in flight at once in connect mode (default 1000)",
    )
    probe.add_argument("--simulate-no-raw", action="store_true", help=argparse.SUPPRESS)
    out = p.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="events as JSON lines on stdout")
    out.add_argument(
        "--metrics-port",
        type=port,
        metavar="N",
        help="serve Prometheus metrics on this port (0: any free port, printed on stderr)",
    )
    out.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        metavar="IP",
        help="address the metrics endpoint listens on (default 127.0.0.1)",
    )
    out.add_argument(
        "--webhook",
        metavar="URL",
        help="also POST each event as JSON to this URL (queued, retried; never blocks probing)",
    )
    out.add_argument(
        "-v", "--verbose", action="store_true", help="a summary of every round on stderr"
    )
    out.add_argument("-q", "--quiet", action="store_true", help="no info lines on stderr")
    p.set_defaults(handler=handle)


@contextmanager
def _signals(run: Run, stopped: list[str]) -> Iterator[None]:
    """SIGHUP reloads, SIGTERM stops (recorded in ``stopped``); the old handlers come back after."""

    def hup(signum: int, frame: FrameType | None) -> None:
        run.reload()

    def term(signum: int, frame: FrameType | None) -> None:
        stopped.append("terminated")
        run.stop()

    handlers: list[tuple[int, Any]] = []
    for sig, fn in ((getattr(signal, "SIGHUP", None), hup), (signal.SIGTERM, term)):
        if sig is None:
            continue
        with contextlib.suppress(ValueError):  # not the main thread: no signal handling
            handlers.append((sig, signal.signal(sig, fn)))
    try:
        yield
    finally:
        for sig, old in handlers:
            signal.signal(sig, old)


def handle(args: argparse.Namespace) -> int:
    from lanes import probe
    from lanes.probe.webhook import Webhook

    def err(line: str) -> None:
        print(f"lanes probe: {line}", file=sys.stderr, flush=True)

    webhook = Webhook(args.webhook) if args.webhook else None
    run = probe.start(
        args.targets,
        interval=args.interval,
        timeout=args.timeout,
        mode=args.mode,
        down_after=args.down_after,
        up_after=args.up_after,
        flap_window=args.flap_window,
        rounds=args.rounds,
        recv_buffer=args.recv_buffer,
        connect_concurrency=args.connect_concurrency,
        metrics_port=args.metrics_port,
        metrics_host=args.metrics_host if args.metrics_port is not None else None,
        simulate_no_raw=args.simulate_no_raw,
    )
    address = run.metrics_address
    if address is not None and not args.quiet:
        host, bound = address
        err(f"metrics on http://{host if ':' not in host else f'[{host}]'}:{bound}/metrics")
    show: Callable[[probe.Event], str] = probe.Event.to_json if args.json else probe.Event.to_text
    rounds = 0
    stopped: list[str] = []

    def take(messages: list[probe.Message]) -> None:
        nonlocal rounds
        lines = []
        for m in messages:
            if isinstance(m, probe.Event):
                lines.append(show(m))
                if webhook is not None:
                    webhook.post(m.to_dict())
            elif isinstance(m, probe.Notice):
                if m.level == "warning":
                    err(f"warning: {m.message}")
                elif not args.quiet:
                    err(m.message)
            else:
                rounds += 1
                if args.verbose:
                    err(m.to_text())
        if lines:
            sys.stdout.write("\n".join(lines) + "\n")
            sys.stdout.flush()

    try:
        with _signals(run, stopped):
            try:
                while (batch := run.poll(_POLL_S)) is not None:
                    take(batch)
            except KeyboardInterrupt:
                stopped.append("interrupted")
                run.stop()
                while (batch := run.poll(_POLL_S)) is not None:
                    take(batch)
        run.result()
    finally:
        if webhook is not None:
            stats = webhook.close()
            if stats.failed or stats.dropped:
                err(
                    f"warning: webhook: {stats.delivered} delivered, {stats.failed} failed, "
                    f"{stats.dropped} dropped (last error: {stats.last_error})"
                )
    if stopped:
        err(f"{stopped[0]}: stopped after {rounds} rounds")
        return EXIT_INTERRUPTED if stopped[0] == "interrupted" else 0
    return 0
