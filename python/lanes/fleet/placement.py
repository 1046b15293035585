"""Where members go: a pure plan from the cluster's nodes and the fleet's configuration.

The rule (:func:`plan`): every alive Ray node, ordered by IP address then node id, gets

- with ``devices = "auto"`` (or ``"gpu-like"``) and GPUs on the node: one member per group of
  ``gpus_per_member`` GPUs (all of the node's GPUs when None; GPUs left over after the last
  whole group are unused), each asking Ray for that many GPUs;
- otherwise one member, asking for no GPU, with ``devices`` as given (``sim:N``, ``cpu:N``,
  ``auto``, ``gpu-like``).

Each member is pinned to its node (a hard node affinity: Ray restarts it there, never
elsewhere). With ``port`` P > 0, the members sharing one IP address take P, P+1, ... in plan
order (several Ray nodes may run on one host); with 0 each takes any free port.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from lanes.fleet.config import FleetConfig, automatic_devices


@dataclass(frozen=True)
class Node:
    """An alive Ray node: its id, IP address and GPU count."""

    node_id: str
    ip: str
    gpus: int


@dataclass(frozen=True)
class Slot:
    """One planned member."""

    index: int
    node_id: str
    node_ip: str
    gpus: int
    devices: str
    port: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def nodes_from_ray(entries: Iterable[Mapping[str, Any]]) -> list[Node]:
    """Alive nodes from ``ray.nodes()``."""
    return [
        Node(str(e["NodeID"]), str(e["NodeManagerAddress"]), int(e["Resources"].get("GPU", 0)))
        for e in entries
        if e.get("Alive")
    ]


def plan(nodes: Iterable[Node], config: FleetConfig) -> list[Slot]:
    """The members to place, in index order (see the module overview for the rule)."""
    slots: list[Slot] = []
    per_ip: Counter[str] = Counter()
    for node in sorted(nodes, key=lambda n: (n.ip, n.node_id)):
        if automatic_devices(config.devices) and node.gpus > 0:
            size = config.gpus_per_member or node.gpus
            groups = [size] * (node.gpus // size)
        else:
            groups = [0]
        for gpus in groups:
            port = config.port + per_ip[node.ip] if config.port else 0
            per_ip[node.ip] += 1
            slots.append(Slot(len(slots), node.node_id, node.ip, gpus, config.devices, port))
    return slots
