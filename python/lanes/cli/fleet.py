"""``lanes fleet up|status|down``: a serving fleet on a Ray cluster (lanes.fleet).

``up`` turns its options into one :class:`lanes.fleet.FleetConfig` (everything after ``--`` is
passed to every member's ``lanes serve``), checked before Ray is touched. User guide:
docs/fleet.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from lanes.errors import BAD_ARGUMENT, LanesError

_EPILOG = """\
examples:
  RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 ray start --head --node-ip-address 127.0.0.1
                                                    a one-node cluster on this host's loopback
  lanes fleet up --devices sim:2                    one lanes serve (demo zoo) per node
  lanes fleet up --models ./repo -- --policy fifo   after --: options for every lanes serve
  lanes fleet status --json                         members, nodes, URLs, health, restarts
  lanes fleet down                                  drain and remove every member

address: --address HOST:PORT of the cluster's head (GCS), or auto (default: $RAY_ADDRESS,
         else auto: the cluster started on this host). Needs pip install 'lanes[ray]'.
"""


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--address",
        metavar="ADDR",
        default=os.environ.get("RAY_ADDRESS", "auto"),
        help="the Ray cluster: HOST:PORT or auto (default: $RAY_ADDRESS, else auto)",
    )
    parser.add_argument("--name", metavar="NAME", default="default", help="fleet name")


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "fleet",
        help="a serving fleet on Ray: one lanes serve per node, restarted when it dies",
        description="A serving fleet on a Ray cluster: one lanes serve per node (or per GPU\n"
        "group) as Ray actors, health-checked and restarted by Ray. User guide: docs/fleet.md.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    up = actions.add_parser(
        "up",
        help="place the members and wait until every one is ready",
        description="Place one lanes serve per node (or per GPU group) and wait until every "
        "member answers /v2/health/ready. Options after -- go to every lanes serve.",
    )
    _common(up)
    up.add_argument(
        "--devices",
        metavar="SPEC",
        default="auto",
        help="each member's devices: auto (the node's GPUs, else lanes serve's auto), sim:N, "
        "cpu:N (default: auto)",
    )
    up.add_argument(
        "--gpus-per-member",
        metavar="K",
        type=int,
        help="GPUs per member on GPU nodes (default: all of a node's GPUs in one member)",
    )
    up.add_argument("--models", metavar="DIR", help="a model repository (same path on every node)")
    up.add_argument(
        "--host", metavar="ADDR", default="node", help="bind address (default: node: the node's IP)"
    )
    up.add_argument(
        "--port",
        metavar="N",
        type=int,
        default=0,
        help="first port on each host, next members P+1... (default: 0: any free port)",
    )
    up.add_argument(
        "--max-restarts", metavar="N", type=int, default=3, help="restarts per member (-1: any)"
    )
    up.add_argument(
        "--ready-timeout", metavar="S", type=float, default=120.0, help="seconds to get ready"
    )
    up.add_argument(
        "--health-interval",
        metavar="S",
        type=float,
        default=1.0,
        help="seconds between a member's readiness checks; 3 failed in a row restart it",
    )
    up.add_argument(
        "--num-cpus", metavar="N", type=float, default=0.0, help="Ray CPUs each member reserves"
    )
    up.add_argument("serve_args", nargs="*", metavar="-- SERVE_OPTION", help=argparse.SUPPRESS)
    up.set_defaults(handler=run_up, display="lanes fleet up")

    status = actions.add_parser("status", help="members, nodes, URLs, health, restarts")
    _common(status)
    status.add_argument("--json", action="store_true", help="one JSON object on stdout")
    status.set_defaults(handler=run_status, display="lanes fleet status")

    down = actions.add_parser("down", help="drain and remove every member (idempotent)")
    _common(down)
    down.add_argument(
        "--drain-timeout",
        metavar="S",
        type=float,
        default=10.0,
        help="seconds each server gets to finish in-flight work (default: 10)",
    )
    down.set_defaults(handler=run_down, display="lanes fleet down")


def _need_ray() -> None:
    """Fail early without Ray, without importing it: Ray must be imported only once the
    address is known (lanes.fleet.control.connect sets what Ray reads at import)."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        from lanes.fleet.control import require_ray

        require_ray()


def _print(members: list[Any]) -> None:
    for m in members:
        print(
            f"member {m.index} · node {m.node_ip} ({m.node_id[:8]}) · {m.url or '-'} · "
            f"devices {m.devices} · {m.state} · restarts {m.restarts}"
        )


def run_up(args: argparse.Namespace) -> int:
    from lanes.fleet import FleetConfig, up

    _need_ray()
    extra = list(args.serve_args)
    if extra and "--" not in args.argv:
        raise LanesError(
            BAD_ARGUMENT, f"unrecognized arguments: {' '.join(extra)} (lanes serve options go "
            "after --)"
        )  # fmt: skip
    config = FleetConfig(
        name=args.name,
        devices=args.devices,
        gpus_per_member=args.gpus_per_member,
        host=args.host,
        port=args.port,
        models=Path(args.models) if args.models else None,
        serve_args=tuple(extra),
        max_restarts=args.max_restarts,
        ready_timeout_s=args.ready_timeout,
        health_interval_s=args.health_interval,
        num_cpus=args.num_cpus,
    )
    members = up(config, args.address)
    _print(members)
    count = f"{len(members)} member{'' if len(members) == 1 else 's'}"
    print(f"lanes fleet: '{config.name}' up: {count} ready", file=sys.stderr)
    return 0


def run_status(args: argparse.Namespace) -> int:
    from lanes.fleet import status

    _need_ray()
    members = status(args.address, args.name)
    if args.json:
        print(json.dumps({"name": args.name, "members": [m.as_dict() for m in members]}))
    else:
        _print(members)
    return 0


def run_down(args: argparse.Namespace) -> int:
    from lanes.fleet import down

    _need_ray()
    if args.drain_timeout < 0:
        raise LanesError(BAD_ARGUMENT, f"--drain-timeout {args.drain_timeout:g}: at least 0")
    removed = down(args.address, args.name, args.drain_timeout)
    what = f"{removed} member{'' if removed == 1 else 's'} removed"
    if not removed:
        what = "no members (nothing to do)"
    print(f"lanes fleet: '{args.name}' down: {what}", file=sys.stderr)
    return 0
