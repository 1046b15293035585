"""The one typed configuration of a serving fleet (:class:`FleetConfig`), checked before
anything is placed.

A fleet is named (several can share a cluster); its members run ``lanes serve`` with the
options here plus ``serve_args`` passed through as typed. The fleet owns each member's address
and devices, so ``serve_args`` may not set ``--host``, ``--port`` or ``--devices``; every other
``lanes serve`` option is checked here exactly as ``lanes serve`` would check it, so a bad
value is one line before any actor starts, not a crash loop on every node.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from lanes.errors import BAD_ARGUMENT, LanesError

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
"""A fleet name: it becomes part of Ray actor names."""

OWNED = ("--host", "--port", "--devices")
"""``lanes serve`` options the fleet sets for each member itself."""


AUTOMATIC_DEVICES = ("auto", "gpu-like")
"""The ``--devices`` values each member's ``lanes serve`` resolves on its node
(``lanes.serving.devices.AUTOMATIC``); on a node with GPUs the fleet gives the member that node's
GPUs instead. Named here, not imported, so that the fleet's modules (and each member's actor)
do not load the server."""


def automatic_devices(devices: str) -> bool:
    """Whether ``devices`` is one of :data:`AUTOMATIC_DEVICES`."""
    return devices.strip() in AUTOMATIC_DEVICES


@dataclass(frozen=True)
class FleetConfig:
    """Everything ``lanes fleet up`` needs.

    - ``name``: the fleet's name (default ``default``); its registry is the detached Ray actor
      ``lanes-fleet:<name>`` in the Ray namespace ``lanes``.
    - ``devices``: each member's ``lanes serve --devices``. ``auto``: on a node with GPUs, the
      GPUs Ray assigned to the member (``cuda:0,...`` of its ``CUDA_VISIBLE_DEVICES``), else
      ``lanes serve``'s own ``auto``. Any other spec (``sim:N``, ``cpu:N``) is used as given on
      every node, and members then ask Ray for no GPU.
    - ``gpus_per_member``: on GPU nodes, how many GPUs one member gets (None: all of the node's,
      one member per node; k: ``node GPUs // k`` members per node).
    - ``host``: the members' bind address. ``node``: the node's IP as Ray knows it (loopback on
      a cluster started on 127.0.0.1).
    - ``port``: the first member's port on each node (0: any free port). A member restarted by
      Ray asks for its previous port again, so its URL usually survives the restart.
    - ``models``: a model repository folder that exists at the same path on every node (None:
      the demo zoo).
    - ``serve_args``: further ``lanes serve`` options, passed through.
    - ``max_restarts``: how often Ray restarts one member (-1: without limit).
    - ``ready_timeout_s``: how long ``up`` waits for every member's ``/v2/health/ready``.
    - ``health_interval_s``: how often a member checks its server's readiness;
      ``unhealthy_after`` failed checks in a row (after it was ready) kill the member, so Ray
      restarts it.
    - ``num_cpus``: the Ray CPUs one member reserves (its server's CPU use is its own).
    """

    name: str = "default"
    devices: str = "auto"
    gpus_per_member: int | None = None
    host: str = "node"
    port: int = 0
    models: Path | None = None
    serve_args: tuple[str, ...] = ()
    max_restarts: int = 3
    ready_timeout_s: float = 120.0
    health_interval_s: float = 1.0
    unhealthy_after: int = 3
    num_cpus: float = 0.0


def _range(key: str, value: float, low: float, high: float | None = None) -> None:
    if value < low or (high is not None and value > high):
        allowed = f"from {low:g} to {high:g}" if high is not None else f"at least {low:g}"
        raise LanesError(BAD_ARGUMENT, f"{key} {value:g}: out of range; allowed: {allowed}")


def check(config: FleetConfig) -> FleetConfig:
    """Return ``config`` if every value is allowed, else raise ``LanesError(bad_argument)``
    naming the key, the value and what is allowed."""
    if not NAME.fullmatch(config.name):
        raise LanesError(
            BAD_ARGUMENT,
            f"--name {config.name!r}: allowed: letters, digits, '_', '.', '-' (at most 63, "
            "starting with a letter or digit)",
        )
    if config.gpus_per_member is not None:
        _range("--gpus-per-member", config.gpus_per_member, 1, 64)
    _range("--port", config.port, 0, 65535)
    if config.max_restarts != -1:
        _range("--max-restarts", config.max_restarts, 0, 1000)
    _range("--ready-timeout", config.ready_timeout_s, 1, 3600)
    _range("--health-interval", config.health_interval_s, 0.05, 60)
    _range("--unhealthy-after", config.unhealthy_after, 1, 100)
    _range("--num-cpus", config.num_cpus, 0, 1024)
    if config.models is not None and not config.models.is_dir():
        raise LanesError(BAD_ARGUMENT, f"--models {config.models}: no such folder")
    for arg in config.serve_args:
        if arg.split("=", 1)[0] in OWNED:
            raise LanesError(
                BAD_ARGUMENT,
                f"lanes serve option {arg!r}: the fleet sets it for each member; use "
                "lanes fleet's --host, --port or --devices",
            )
    _check_serve(config)
    return config


def _check_serve(config: FleetConfig) -> None:
    """Parse and resolve one member's ``lanes serve`` options as ``lanes serve`` would."""
    import argparse

    from lanes.cli import serve as serve_cli
    from lanes.serving.config import resolve

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> None:  # type: ignore[override]
            raise LanesError(BAD_ARGUMENT, f"lanes serve options: {message}")

    root = _Parser(prog="lanes")
    subparsers = root.add_subparsers(dest="command", parser_class=_Parser)
    serve_cli.register(subparsers)
    devices = "cpu" if automatic_devices(config.devices) else config.devices
    owned = ["--host", "127.0.0.1", "--port", "0", "--devices", devices]
    args = root.parse_args(["serve", *owned, *serve_options(config)])
    cli = {k: v for k, v in vars(args).items() if k not in ("command", "handler", "demo")}
    cli["models"] = args.models if args.models else ("demo" if args.demo else None)
    if args.config is not None and not Path(args.config).is_file():
        raise LanesError(BAD_ARGUMENT, f"lanes serve --config {args.config}: no such file")
    try:
        resolve(
            {k: v for k, v in cli.items() if k != "config"},
            Path(args.config) if args.config else None,
        )
    except LanesError as err:
        raise LanesError(err.code, f"lanes serve options: {err.message}") from None


def serve_options(config: FleetConfig) -> list[str]:
    """A member's ``lanes serve`` options besides the ``--host``, ``--port`` and ``--devices``
    each member sets for itself."""
    args = [] if config.models is None else ["--models", str(config.models.resolve())]
    given = {a.split("=", 1)[0] for a in config.serve_args}
    if "--metrics-port" not in given:
        args += ["--metrics-port", "0"]  # members on one host must not all want 8002
    if "--grpc-port" not in given:
        args += ["--grpc-port", "0"]  # nor 8001 beside 8000, another member's port
    return [*args, *config.serve_args]
