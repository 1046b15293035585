"""``up``, ``status``, ``down`` and the member listing, over a Ray cluster.

Every call joins the cluster at ``address`` (:func:`connect`; a process already connected to
Ray keeps its connection), works with the fleet's named detached actors in the Ray namespace
``lanes`` (lanes.fleet.registry), and leaves them running when it returns: a fleet outlives
the command that brought it up.

- :func:`up` plans the members (lanes.fleet.placement), starts the registry on the head node
  and one :class:`~lanes.fleet.member.Member` actor per slot, and waits until every member
  answers ready. A member that fails or is not ready in time takes the whole fleet down again
  and raises ``member_not_ready`` naming it: ``up`` never leaves half a fleet.
- :func:`status` reads the registry and asks every member, in parallel, for a live check.
- :func:`down` drains every member's server (SIGTERM, then SIGKILL after the drain timeout) and
  kills the actors; a fleet that is not there is not an error (``down`` is idempotent).
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lanes.errors import (
    BAD_ARGUMENT,
    FLEET_EXISTS,
    FLEET_NOT_FOUND,
    MEMBER_NOT_READY,
    MISSING_DEPENDENCY,
    RAY_UNAVAILABLE,
    LanesError,
)
from lanes.fleet.config import FleetConfig, check, serve_options
from lanes.fleet.placement import Slot, nodes_from_ray, plan
from lanes.fleet.registry import actor_name, member_name

NAMESPACE = "lanes"
"""The Ray namespace of every fleet actor."""
_LOOPBACK = ("127.0.0.1", "localhost")
_STATUS_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class MemberStatus:
    """One member as ``lanes fleet status`` shows it.

    ``state``: ``ready`` (its server answers ``/v2/health/ready`` 200), ``unhealthy`` (its
    server answers otherwise), ``restarting`` (Ray is restarting the actor, or it has not
    answered within 5 s), ``dead`` (out of restarts, or its node is gone).
    """

    index: int
    node_id: str
    node_ip: str
    url: str | None
    devices: str
    state: str
    restarts: int
    pid: int | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def require_ray() -> Any:
    """The ``ray`` module, or ``missing_dependency`` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise LanesError(
            MISSING_DEPENDENCY, "lanes fleet needs Ray: pip install 'lanes[ray]'"
        ) from None
    return ray


def resolve(address: str) -> str:
    """``auto`` as Ray resolves it — ``$RAY_ADDRESS``, else the address the last ``ray start``
    on this host wrote (``$RAY_TMPDIR`` or /tmp, ``ray/ray_current_cluster``) — so that a
    loopback cluster is known as one before Ray is imported; anything else as given."""
    if address != "auto":
        return address
    if os.environ.get("RAY_ADDRESS"):
        return os.environ["RAY_ADDRESS"]
    current = Path(os.environ.get("RAY_TMPDIR", "/tmp")) / "ray" / "ray_current_cluster"
    try:
        return current.read_text().strip() or "auto"
    except OSError:
        return "auto"


def connect(address: str) -> Any:
    """The ``ray`` module, joined to the cluster at ``address`` (``auto`` or ``HOST:PORT``)."""
    given, address = address, resolve(address)
    if address.rpartition(":")[0].strip("[]") in _LOOPBACK and "ray" not in sys.modules:
        # Ray replaces a loopback address by the host's outward IP, where a cluster bound to
        # 127.0.0.1 does not listen; Ray reads this when imported.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    ray = require_ray()
    if ray.is_initialized():
        return ray
    options: dict[str, Any] = {}
    if address != "auto" and "://" not in address:
        host, _, port = address.rpartition(":")
        host = host.strip("[]")
        if not host or not port.isdigit():
            raise LanesError(RAY_UNAVAILABLE, f"--address {given!r}: not auto or HOST:PORT")
        try:
            socket.create_connection((host, int(port)), timeout=3.0).close()
        except OSError as err:
            raise LanesError(
                RAY_UNAVAILABLE,
                f"--address {_shown(given, address)}: no Ray cluster there ({err.strerror})",
            ) from None
        if host in _LOOPBACK:
            # Ray otherwise looks for this driver's raylet at the host's outward IP, where a
            # cluster bound to loopback has none.
            options["_node_ip_address"] = "127.0.0.1"
    try:
        ray.init(address=address, log_to_driver=False, configure_logging=False, **options)
    except (ConnectionError, RuntimeError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise LanesError(
            RAY_UNAVAILABLE, f"--address {_shown(given, address)}: no Ray cluster to join ({first})"
        ) from None
    return ray


def _members(count: int) -> str:
    return f"{count} member" if count == 1 else f"{count} members"


def _shown(given: str, address: str) -> str:
    return given if given == address else f"{given} ({address})"


def _registry(ray: Any, name: str) -> Any | None:
    try:
        return ray.get_actor(actor_name(name), namespace=NAMESPACE)
    except ValueError:
        return None


def _head(ray: Any) -> str | None:
    for node in ray.nodes():
        if node.get("Alive") and "node:__internal_head__" in node["Resources"]:
            return str(node["NodeID"])
    return None


def up(config: FleetConfig, address: str = "auto") -> list[MemberStatus]:
    """Bring the fleet up and return its members once every one is ready."""
    from lanes.fleet.member import Member
    from lanes.fleet.registry import Registry

    check(config)
    ray = connect(address)  # before any import of ray (see connect)
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    if (existing := _registry(ray, config.name)) is not None:
        count = len(ray.get(existing.snapshot.remote(), timeout=10)["members"])
        raise LanesError(
            FLEET_EXISTS,
            f"fleet '{config.name}' is already up ({_members(count)}); "
            f"lanes fleet down --name {config.name} first",
        )
    nodes = nodes_from_ray(ray.nodes())
    slots = plan(nodes, config)
    if not slots:
        raise LanesError(
            BAD_ARGUMENT,
            f"--gpus-per-member {config.gpus_per_member}: no member to place; the most GPUs "
            f"on one of the {len(nodes)} nodes is {max((n.gpus for n in nodes), default=0)}",
        )
    plan_dicts = [s.as_dict() for s in slots]
    head = _head(ray)
    registry = (
        ray.remote(Registry)
        .options(
            name=actor_name(config.name),
            namespace=NAMESPACE,
            lifetime="detached",
            num_cpus=0,
            max_restarts=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(head, soft=True)
            if head
            else "DEFAULT",
        )
        .remote(_config_dict(config), plan_dicts)
    )
    settings = {
        "host": config.host,
        "serve_argv": serve_options(config),
        "ready_timeout_s": config.ready_timeout_s,
        "health_interval_s": config.health_interval_s,
        "unhealthy_after": config.unhealthy_after,
    }
    members = [
        ray.remote(Member)
        .options(
            name=member_name(config.name, slot.index),
            namespace=NAMESPACE,
            lifetime="detached",
            max_restarts=config.max_restarts,
            max_task_retries=0,
            num_cpus=config.num_cpus,
            num_gpus=slot.gpus,
            scheduling_strategy=NodeAffinitySchedulingStrategy(slot.node_id, soft=False),
        )
        .remote(actor_name(config.name), slot.as_dict(), settings)
        for slot in slots
    ]
    del registry  # the named actor lives on; status and down find it by name
    refs = {m.info.remote(): slot for m, slot in zip(members, slots, strict=True)}
    deadline = time.monotonic() + config.ready_timeout_s + 10.0  # the member's own timeout first
    try:
        failure = _wait_ready(ray, refs, deadline, config.ready_timeout_s)
    except BaseException:  # interrupted: leave no half fleet behind
        down(address, config.name, drain_timeout=0.0)
        raise
    if failure is not None:
        down(address, config.name, drain_timeout=0.0)
        raise LanesError(MEMBER_NOT_READY, f"{failure}; the fleet was taken down")
    return status(address, config.name)


def _wait_ready(ray: Any, refs: dict[Any, Slot], deadline: float, timeout: float) -> str | None:
    """Wait for every member's first ``info``; the first failure as one line, or None."""
    pending = list(refs)
    failure: str | None = None
    while pending and failure is None:
        done, pending = ray.wait(pending, timeout=max(0.0, deadline - time.monotonic()))
        if not done:
            slot = refs[pending[0]]
            failure = (
                f"member {slot.index} on node {slot.node_ip} ({slot.node_id[:8]}) not ready "
                f"within {timeout:g} s (no node resources for it, or a slow start)"
            )
        for ref in done:
            try:
                ray.get(ref)
            except Exception as err:  # a creation error, reported as one line
                slot = refs[ref]
                failure = (
                    f"member {slot.index} on node {slot.node_ip} ({slot.node_id[:8]}): "
                    f"{_reason(err)}"
                )
    return failure


def _config_dict(config: FleetConfig) -> dict[str, Any]:
    fields = asdict(config)
    fields["models"] = None if config.models is None else str(config.models)
    fields["serve_args"] = list(config.serve_args)
    return fields


_REASON = re.compile(r"RuntimeError: (lanes serve [^\n]*)")


def _reason(err: BaseException) -> str:
    """The one line a failed member left: its ``RuntimeError`` if any, else the error's type."""
    found = _REASON.findall(str(err))
    return found[-1] if found else f"{type(err).__name__}: {str(err).strip().splitlines()[0]}"


def status(address: str = "auto", name: str = "default") -> list[MemberStatus]:
    """Every member of fleet ``name`` with a live readiness check."""
    ray = connect(address)
    registry = _registry(ray, name)
    if registry is None:
        raise LanesError(FLEET_NOT_FOUND, f"no fleet '{name}' on this cluster (lanes fleet up)")
    snapshot = ray.get(registry.snapshot.remote(), timeout=10)
    probes: dict[int, Any] = {}
    for record in snapshot["members"]:
        try:
            actor = ray.get_actor(member_name(name, record["index"]), namespace=NAMESPACE)
        except ValueError:
            continue
        probes[record["index"]] = actor.info.remote()
    ray.wait(list(probes.values()), num_returns=len(probes), timeout=_STATUS_TIMEOUT_S)
    result = []
    for record in snapshot["members"]:
        info = record["info"] or {}
        state, url, pid = "dead", info.get("url"), info.get("pid")
        ref = probes.get(record["index"])
        if ref is not None:
            state = "restarting"
            ready, _ = ray.wait([ref], timeout=0)
            if ready:
                try:
                    live = ray.get(ref)
                    state = "ready" if live["ready"] else "unhealthy"
                    url, pid = live["url"], live["pid"]
                except ray.exceptions.ActorDiedError:
                    state = "dead"
                except ray.exceptions.RayError:
                    state = "restarting"
        result.append(
            MemberStatus(
                index=int(record["index"]),
                node_id=str(record["node_id"]),
                node_ip=str(record["node_ip"]),
                url=url,
                devices=str(info.get("devices", record["devices"])),
                state=state,
                restarts=max(0, int(record["starts"]) - 1),
                pid=pid,
            )
        )
    return result


def down(address: str = "auto", name: str = "default", drain_timeout: float = 10.0) -> int:
    """Drain and remove every member and the registry of fleet ``name``; how many members
    were removed (0 when there was no such fleet)."""
    ray = connect(address)
    prefix = f"{actor_name(name)}:member-"
    names = [
        entry["name"]
        for entry in ray.util.list_named_actors(all_namespaces=True)
        if entry["namespace"] == NAMESPACE and entry["name"].startswith(prefix)
    ]
    actors = []
    for actor_id in names:
        try:
            actors.append(ray.get_actor(actor_id, namespace=NAMESPACE))
        except ValueError:
            continue
    stops = [a.stop.remote(drain_timeout) for a in actors]
    if stops:
        ray.wait(stops, num_returns=len(stops), timeout=drain_timeout + 5.0)
    for actor in actors:
        ray.kill(actor, no_restart=True)
    registry = _registry(ray, name)
    if registry is not None:
        ray.kill(registry, no_restart=True)
    return len(actors)


def members(address: str = "auto", name: str = "default") -> list[str]:
    """The URLs of fleet ``name``'s ready members, by index — a member source for
    ``lanes.client`` (``members=lambda: lanes.fleet.members(ADDRESS)``), one registry call."""
    ray = connect(address)
    registry = _registry(ray, name)
    if registry is None:
        raise LanesError(FLEET_NOT_FOUND, f"no fleet '{name}' on this cluster (lanes fleet up)")
    return list(ray.get(registry.urls.remote(), timeout=10))


def member_source(
    address: str = "auto", name: str = "default"
) -> Callable[[], Awaitable[list[str]]]:
    """An ``async`` member source for ``lanes.client``'s ``members``: :func:`members` on a
    worker thread, so a client's event loop never waits on Ray."""

    async def source() -> list[str]:
        return await asyncio.to_thread(members, address, name)

    return source
