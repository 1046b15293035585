"""``lanes bench URL``: one load run against a target, reported like wrk.

Open loop with ``--rate`` (latency from each request's intended send time), closed loop
without it. ``lanes bench corpus`` (:mod:`lanes.cli.bench_corpus`) builds request corpora;
``lanes bench run`` (:mod:`lanes.cli.bench_run`) runs a lab experiment.
Times accept units: ``10s``, ``500ms``, ``2m``, ``250us``; a bare number is seconds.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from lanes.errors import BAD_ARGUMENT, LanesError

if TYPE_CHECKING:
    from lanes.bench.result import Result

EXIT_INTERRUPTED = 130

_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_TIME = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[-+]?[0-9]+)?)\s*(us|ms|s|m|h)?\s*$", re.IGNORECASE)


def seconds(text: str) -> float:
    """``"10s"`` → 10.0, ``"500ms"`` → 0.5, ``"2m"`` → 120.0, ``"3"`` → 3.0."""
    m = _TIME.match(text)
    if m is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time; use e.g. 10s, 500ms, 2m, 250us or a number of seconds"
        )
    return float(m.group(1)) * _UNITS[(m.group(2) or "s").lower()]


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "bench",
        help="load-test a URL (open or closed loop), reported like wrk; "
        "`lanes bench corpus` builds request corpora; `lanes bench run` runs a lab experiment",
        description="Load-test one target and report latency percentiles, throughput and "
        "errors. With --rate: open loop from one seeded schedule, latency measured from each "
        "request's intended send time (no coordinated omission). Without: closed loop at "
        "--connections. Also: `lanes bench corpus` builds KServe v2 request corpora, and "
        "`lanes bench run EXPERIMENT.toml` runs a lab experiment (docs/lab.md).",
        epilog="targets: http://HOST:PORT/PATH, unix:/SOCKET[:/HTTP/PATH] (HTTP over a Unix "
        "socket), frame+unix:/SOCKET (4-byte big-endian length-prefixed frames), "
        "grpc://HOST:PORT[/pkg.Service/Method] (gRPC unary calls over HTTP/2; default method "
        "KServe v2's ModelInfer; the body is the protobuf message, or see --kserve-model). "
        "Times take units: 10s, 500ms, 2m, 250us.",
    )
    p.add_argument("url", metavar="URL", help="the target (see below)")
    load = p.add_argument_group("load")
    load.add_argument(
        "-R", "--rate", type=number, help="open loop at this many requests/s (default: closed loop)"
    )
    load.add_argument(
        "--arrival",
        choices=("poisson", "constant"),
        default="poisson",
        help="open-loop inter-arrival law (default: poisson)",
    )
    load.add_argument(
        "-c",
        "--connections",
        type=positive_int,
        help="connections: the concurrency in closed loop (default 10), the most requests in "
        "flight in open loop (default 64)",
    )
    load.add_argument(
        "-t", "--threads", type=positive_int, help="sender threads (default: min(2, cores))"
    )
    load.add_argument(
        "-d",
        "--duration",
        type=seconds,
        help="issue requests for this long (default 10s unless -n is given)",
    )
    load.add_argument("-n", "--requests", type=positive_int, help="send this many requests")
    load.add_argument(
        "--timeout", type=seconds, default=10.0, help="per-request timeout (default 10s)"
    )
    load.add_argument("--seed", type=int, default=1, help="seed of schedule and corpus picks")
    load.add_argument(
        "--late-after",
        type=seconds,
        default=0.001,
        help="a send leaving later than this behind its schedule counts as late (default 1ms)",
    )
    req = p.add_argument_group("requests")
    req.add_argument("-m", "--method", help="HTTP method (default GET, POST with a body)")
    req.add_argument(
        "-H",
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="add a header (repeatable)",
    )
    body = req.add_mutually_exclusive_group()
    body.add_argument("--body", help="request body text")
    body.add_argument("--body-file", type=Path, help="request body read from a file")
    req.add_argument(
        "--corpus",
        type=Path,
        help="requests from a folder (a body per file) or a JSONL file "
        '({"method","path","headers","body"|"body_b64"|"body_file","weight"} per line)',
    )
    req.add_argument(
        "--corpus-order",
        choices=("random", "round-robin"),
        default="random",
        help="weighted seeded draws or round-robin (default random)",
    )
    req.add_argument(
        "--frame-hello",
        type=Path,
        metavar="FILE",
        help="frame targets: send this file's bytes as one frame on each new connection; "
        "its reply is read and not recorded (a session handshake)",
    )
    req.add_argument(
        "--frame-seq",
        action="store_true",
        help="frame targets: each body is a sequence of whole length-prefixed frames, each "
        "sent after the previous reply; the exchange timed is the whole sequence",
    )
    req.add_argument(
        "--grpc-connections",
        type=positive_int,
        metavar="N",
        help="grpc:// targets: HTTP/2 connections per sender thread, shared by the "
        "--connections streams (default 1)",
    )
    req.add_argument(
        "--kserve-model",
        metavar="MODEL",
        help="grpc:// targets: the body is a KServe v2 REST infer request (JSON or binary "
        "extension) for MODEL; it is sent as a ModelInferRequest (corpus entries with a "
        "/v2/models/M/infer path are converted for M without this)",
    )
    prof = p.add_argument_group("diagnosis (docs/diagnosis.md)")
    prof.add_argument(
        "--profile",
        metavar="PID|COMMAND",
        help="while the load runs, profile the server: a PID (and its descendants), or a "
        "command line that starts it (started here, waited for until URL's port accepts, "
        "stopped at the end); prints the findings",
    )
    prof.add_argument(
        "--profile-out",
        type=Path,
        metavar="DIR",
        help="where the profile's files go: folded stacks, flame graphs, profile.json "
        "(default ./lanes-profile-<time>)",
    )
    prof.add_argument(
        "--profile-rate",
        type=positive_int,
        default=49,
        metavar="HZ",
        help="stack samples per second (default 49)",
    )
    prof.add_argument(
        "--profile-native",
        action="store_true",
        help="Python servers: record native frames too (py-spy --native)",
    )
    out = p.add_argument_group("output")
    out.add_argument("--json", type=Path, metavar="FILE", help="write the result as JSON")
    out.add_argument(
        "--hdr",
        type=Path,
        metavar="FILE",
        help="write the latency histogram in HdrHistogram's percentile-distribution format",
    )
    out.add_argument(
        "--hdr-service",
        type=Path,
        metavar="FILE",
        help="the same for the service-time histogram",
    )
    out.add_argument(
        "--send-log",
        type=Path,
        metavar="FILE",
        help="write 'index intended_ns sent_ns' per send (diagnostics; grows with the run)",
    )
    out.add_argument(
        "-q", "--quiet", action="store_true", help="no progress line and no text report"
    )
    p.set_defaults(handler=handle)


def _check_outputs(args: argparse.Namespace) -> None:
    from lanes.files import check_writable

    for path, what in (
        (args.json, "--json"),
        (args.hdr, "--hdr"),
        (args.hdr_service, "--hdr-service"),
        (args.send_log, "--send-log"),
    ):
        if path is not None:
            check_writable(path, what)


def handle(args: argparse.Namespace) -> int:
    if args.rate is not None and args.rate <= 0:
        raise LanesError(BAD_ARGUMENT, f"--rate must be positive, not {args.rate:g}")
    _check_outputs(args)
    if args.profile is None:
        return _run(args)
    from lanes.cli import bench_profile

    return bench_profile.run_profiled(args, _run)


def _run(args: argparse.Namespace, after: Callable[[Result], None] | None = None) -> int:
    """One load run as the arguments say; ``after`` sees the result before it is printed."""
    from lanes.bench import engine, text
    from lanes.files import write_text_atomic

    show = not args.quiet and sys.stderr.isatty()

    def progress(p: engine.Progress) -> None:
        rate = p.replies / p.elapsed_s if p.elapsed_s > 0 else 0.0
        print(
            f"\r  {p.elapsed_s:6.1f} s  sent {p.sent:,}  {rate:,.0f} replies/s  "
            f"errors {p.errors:,}   ",
            end="",
            file=sys.stderr,
            flush=True,
        )

    result = engine.run(
        args.url,
        on_progress=progress if show else None,
        rate=args.rate,
        arrival=args.arrival,
        connections=args.connections,
        threads=args.threads,
        duration=args.duration,
        requests=args.requests,
        timeout=args.timeout,
        method=args.method,
        headers=args.header,
        body=args.body,
        body_file=args.body_file,
        corpus=args.corpus,
        corpus_order=args.corpus_order,
        seed=args.seed,
        late_after=args.late_after,
        send_log=args.send_log,
        frame_hello=args.frame_hello,
        frame_seq=args.frame_seq,
        grpc_connections=args.grpc_connections,
        kserve_model=args.kserve_model,
    )
    if show:
        print("\r" + " " * 72 + "\r", end="", file=sys.stderr, flush=True)
    if after is not None:
        after(result)
    if args.json is not None:
        write_text_atomic(args.json, result.to_json() + "\n")
    if args.hdr is not None:
        write_text_atomic(args.hdr, result.percentile_distribution("latency"))
    if args.hdr_service is not None:
        write_text_atomic(args.hdr_service, result.percentile_distribution("service_time"))
    if not args.quiet:
        print(text.render(result), end="")
    return EXIT_INTERRUPTED if result.interrupted else 0
