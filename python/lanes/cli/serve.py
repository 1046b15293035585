"""``lanes serve``: the inference server (KServe v2 REST) on this host's devices.

With no arguments it serves the built-in demo zoo on ``auto`` devices. Configuration is one typed
object (:class:`lanes.serving.ServeConfig`): command line over environment (``LANES_SERVE_*``)
over ``--config FILE`` over defaults, all checked before anything loads. User guide:
docs/serve.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from lanes.errors import BAD_ARGUMENT, LanesError

_EPILOG = """\
examples:
  lanes serve                                   the demo zoo on auto devices, port 8000
  lanes serve --devices sim:4 --policy sjf      four simulated GPUs (no GPU needed)
  lanes serve --models ./repo --devices cpu:2 --policy fifo --port 9000
  lanes zoo export ./repo                       write the demo zoo as a model repository

devices:  auto (default: every CUDA GPU, else one CPU executor per core, 1 intra-op thread
          each; under independent one CPU executor of all cores), gpu-like (auto under
          every policy, independent included), cpu, cpu:N (N CPU executors),
          cuda:0,cuda:1, sim:N (N simulated GPUs)
policies: auto (default: on GPU-like CPU devices, one executor of one intra-op thread per
          core, fair:fast=25,hold=6,burst=100,width=2,beside=any with one batch of each model
          per device in flight; else sjf), independent (each model its own workers,
          overlapping), fifo, limit:K, sjf[:alpha=A,slack=MS|off,starve=MS|off],
          fair[:...,threshold=MS,cap=MS,usage=MS|off,fast=MS|off,...] (sjf with a per-model
          share of device time: docs/policies.md),
          lanes[:...,fast=MS,hold=MS,budget=MS|off,burst=MS|off,width=K,beside=long|any]
          (sjf plus a fast slot per device for short jobs, optionally gated or widened:
          docs/policies.md), edf
environment: LANES_SERVE_DEVICES, LANES_SERVE_POLICY, LANES_SERVE_PORT, ... (any option)
"""


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        help="serve models over KServe v2 with a host-wide scheduler",
        description="Serve models over the KServe v2 / Open Inference Protocol (REST). Several\n"
        "models share the devices; one scheduler picks which model's batch runs next.\n"
        "User guide: docs/serve.md.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--demo", action="store_true", help="serve the built-in demo zoo (default)")
    source.add_argument("--models", metavar="DIR", help="a model repository folder")
    parser.add_argument("--devices", metavar="SPEC", help="devices (default: auto)")
    parser.add_argument(
        "--policy",
        metavar="NAME",
        help="scheduling policy (default: auto, by the devices' kind; see policies below)",
    )
    parser.add_argument("--host", metavar="ADDR", help="bind address (default: 127.0.0.1)")
    parser.add_argument("--port", metavar="N", help="HTTP port (default: 8000; 0: any free)")
    parser.add_argument(
        "--cpu-threads",
        metavar="N",
        help="intra-op threads per CPU executor (default: as auto decides, see devices below; "
        "for cpu and cpu:N the cores divided among the executors)",
    )
    parser.add_argument(
        "--workers", metavar="N", help="CPU pool threads for pre/post-processing (default: 2-4)"
    )
    parser.add_argument("--max-body-mb", metavar="MB", help="request body limit (default: 64)")
    parser.add_argument(
        "--zoo-backend",
        metavar="NAME",
        help="the demo zoo's runtime: onnx (default) or torch (same weights; needs PyTorch)",
    )
    parser.add_argument(
        "--cuda-graphs",
        action="store_const",
        const="true",
        default=None,
        help="with --zoo-backend torch: replay each batch shape's network as a CUDA graph on "
        "cuda:N devices, captured at warm-up (off by default)",
    )
    limits = parser.add_argument_group(
        "connection limits", "what slow and hostile clients may hold (docs/serve.md)"
    )
    limits.add_argument(
        "--max-connections",
        metavar="N",
        help="open connections per listener, REST and gRPC apart; past it new ones wait in the "
        "listen backlog (default: 16384)",
    )
    limits.add_argument(
        "--header-timeout",
        metavar="S",
        help="seconds to send a request head or the HTTP/2 preface: a head begun gets 408, an "
        "idle connection is closed (default: 30)",
    )
    limits.add_argument(
        "--body-timeout", metavar="S", help="seconds to send a request body: 408 (default: 60)"
    )
    limits.add_argument(
        "--max-header-kb", metavar="KB", help="largest request head: 431 (default: 64)"
    )
    limits.add_argument(
        "--grpc-keepalive",
        metavar="S",
        help="seconds between gRPC keep-alive pings; no answer within 20 s closes (default: 30)",
    )
    parser.add_argument(
        "--deadline-rule",
        metavar="RULE",
        help="start (default): a request must start by its deadline, as in Triton; finish: "
        "also, when its batch is cut, one estimated to end past its deadline is answered 504 "
        "and not run (docs/serve.md)",
    )
    ops = parser.add_argument_group("operations")
    ops.add_argument(
        "--metrics-port", metavar="N", help="Prometheus /metrics port (default: 8002; 0: any; off)"
    )
    ops.add_argument(
        "--grpc-port",
        metavar="N",
        help="KServe v2 gRPC port (default auto: 8001 beside --port 8000, else any free; 0: any; "
        "off)",
    )
    ops.add_argument(
        "--trace", metavar="FILE", help="write the device timeline (Chrome trace JSON) at exit"
    )
    ops.add_argument(
        "--trace-events", metavar="N", help="timeline ring buffer size (default: 200000 events)"
    )
    ops.add_argument(
        "--trace-requests",
        metavar="N",
        help="also keep the last N requests' spans in the timeline: each request's stages and "
        "the hops between the server's threads (default: 0, none; docs/metrics.md)",
    )
    ops.add_argument(
        "--inline-max-us",
        metavar="US",
        help="on an idle server, run a native model's CPU batch estimated at most US µs on the "
        "driver thread, sparing two thread wake-ups (default: 200; 0: never)",
    )
    ops.add_argument(
        "--warmup-batches",
        metavar="N",
        help="warm-up batches per model, device and batch size before ready (default: 2)",
    )
    ops.add_argument(
        "--drain-timeout",
        metavar="S",
        help="seconds in-flight work may take after SIGTERM/SIGINT (default: 30)",
    )
    ops.add_argument("--log-format", metavar="FMT", help="text (default) or json")
    ops.add_argument("--log-level", metavar="LEVEL", help="debug, info (default), warning, error")
    ops.add_argument(
        "--access-log",
        action="store_const",
        const="true",
        default=None,
        help="log one line per request (off by default)",
    )
    ops.add_argument(
        "--arbiter",
        metavar="unix:PATH",
        help="take device grants from a lanes arbiter daemon (share devices with other processes)",
    )
    ops.add_argument(
        "--arbiter-fallback",
        metavar="MODE",
        help="while the arbiter is down: fail_open (default; limit:1 per device here) or "
        "fail_closed (503)",
    )
    parser.add_argument("--config", metavar="FILE", help="a TOML file of these options")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from lanes.serving import serve
    from lanes.serving.config import resolve

    config_file = Path(args.config) if args.config else None
    if config_file is not None and not config_file.is_file():
        raise LanesError(BAD_ARGUMENT, f"--config {config_file}: no such file")
    cli = {
        "models": args.models if args.models else ("demo" if args.demo else None),
        "devices": args.devices,
        "policy": args.policy,
        "host": args.host,
        "port": args.port,
        "cpu_threads": args.cpu_threads,
        "workers": args.workers,
        "max_body_mb": args.max_body_mb,
        "max_connections": args.max_connections,
        "header_timeout": args.header_timeout,
        "body_timeout": args.body_timeout,
        "max_header_kb": args.max_header_kb,
        "grpc_keepalive": args.grpc_keepalive,
        "zoo_backend": args.zoo_backend,
        "cuda_graphs": args.cuda_graphs,
        "metrics_port": args.metrics_port,
        "grpc_port": args.grpc_port,
        "trace": args.trace,
        "trace_events": args.trace_events,
        "trace_requests": args.trace_requests,
        "inline_max_us": args.inline_max_us,
        "warmup_batches": args.warmup_batches,
        "drain_timeout": args.drain_timeout,
        "log_format": args.log_format,
        "log_level": args.log_level,
        "access_log": args.access_log,
        "arbiter": args.arbiter,
        "arbiter_fallback": args.arbiter_fallback,
        "deadline_rule": args.deadline_rule,
    }
    config = resolve(cli, config_file)

    def announce(server: Any) -> None:
        devices = ", ".join(
            d.name + (" (simulated)" if d.simulated else "") for d in server.devices
        )
        models = ", ".join(m.name for m in server.models)
        metrics_port = getattr(server, "metrics_port", None)
        metrics = f"metrics :{metrics_port}" if metrics_port else "metrics off"
        grpc_port = getattr(server, "grpc_port", None)
        metrics += f" · grpc :{grpc_port}" if grpc_port else " · grpc off"
        rule = " · deadlines: finish" if config.deadline_rule == "finish" else ""
        print(
            f"lanes serve: {server.url} · {metrics} · policy {server.policy}{rule} · "
            f"devices {devices} · models {models} · warm-up {server.warmup_seconds:.2f} s",
            file=sys.stderr,
            flush=True,
        )

    serve(config, announce=announce)
    return 0
