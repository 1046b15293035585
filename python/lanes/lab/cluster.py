"""Load from many machines: the lab's generators as Ray actors spread over a cluster's nodes.

The field's lab ran "1-10 load machines x 1-10 cloned traffic groups". With ``[cluster]`` in an
experiment (or ``lanes bench run --ray ADDRESS``) the runner opens a :class:`Pool`: on each of
``machines`` nodes, one actor per mix entry and clone, pinned to its node (a hard node
affinity, not Ray's packing), each running the same generator function as a local process
(:func:`lanes.lab.generators.run_generator`) on its own node's Rust engine. The run's one
global schedule is split across every actor (:func:`lanes.lab.generators.split`), and the
results are merged exactly as on one host.

Checks, per node and per run (:meth:`Pool.launch`):

- **clock offset**: the generators start at a shared ``start_unix``, so a node's clock error is
  a shift of its whole schedule. Before each run the driver asks each actor for its
  ``time.time()`` between two readings of its own (NTP's rule: offset = remote - midpoint,
  uncertain by ± rtt / 2), keeps the sample with the shortest round trip of
  :data:`_CLOCK_SAMPLES`, and reports ``clock_offset_ms`` ± ``clock_uncertainty_ms``;
- **send delay**: the node's generators' results merged: ``late_sends_fraction`` and the send
  delay percentiles.

A node whose late sends exceed ``max_late_sends`` of its sends, or whose clock may be further
than ``max_clock_offset_ms`` from the driver's (``|offset| + rtt / 2`` beyond it), makes the run
``behind``: the run file says so and why (``cluster``), and the aggregate leaves the run out of
its means, listing it (docs/lab.md). A generator actor that dies fails the run, naming its node;
the pool is then closed (no partial result is written as complete).

Ray is imported only here, and only when a pool opens: without ``[cluster]`` nothing in the lab
needs it.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lanes.bench.result import Result, merge
from lanes.errors import BAD_ARGUMENT, MISSING_DEPENDENCY, LanesError
from lanes.lab.experiment import Cluster

_CLOCK_SAMPLES = 5
"""Round trips per actor for the clock offset; the shortest one is kept."""
_CLOSE_S = 10.0
"""How long :meth:`Pool.close` waits for the actors to remove their directories."""
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _ray() -> Any:
    """The ``ray`` module, or a clear error when the extra is not installed."""
    try:
        import ray
    except ImportError:
        raise LanesError(
            MISSING_DEPENDENCY,
            "[cluster] needs Ray: pip install 'lanes[ray]' (or drop [cluster] to generate load "
            "on this host)",
        ) from None
    return ray


def connect(address: str) -> bool:
    """Join the Ray cluster at ``address`` (``auto`` or ``HOST:PORT``) unless this process
    already has; True when this call connected (so the caller disconnects)."""
    host = address.rsplit(":", 1)[0].strip("[]")
    if host in _LOOPBACK and "ray" not in sys.modules:
        # Ray replaces a loopback address by the host's outward IP, where a cluster bound to
        # 127.0.0.1 does not listen; this keeps the driver on loopback too.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    ray = _ray()
    if ray.is_initialized():
        return False
    try:
        ray.init(address=address, log_to_driver=False, configure_logging=False)
    except (ConnectionError, ValueError, RuntimeError) as err:
        raise LanesError(BAD_ARGUMENT, f"[cluster] ray = {address!r}: {err}") from None
    return True


@dataclass(frozen=True)
class Node:
    """A node that generates load: Ray's id, its address and host name."""

    node_id: str
    ip: str
    host: str

    @property
    def label(self) -> str:
        """How messages name it: ``IP (host, node 1a2b3c4d)``."""
        return f"{self.ip} ({self.host}, node {self.node_id[:8]})"


class _Generator:
    """The actor: one generator process on one node, holding its model's corpus there in a
    directory of its own, which :meth:`close` removes (the pool calls it before it ends the
    actor; a killed actor's is left behind)."""

    def __init__(self, corpus_name: str, corpus_text: str) -> None:
        self._dir = tempfile.mkdtemp(prefix="lanes-gen-")
        self._corpus = str(Path(self._dir) / corpus_name)
        Path(self._corpus).write_text(corpus_text, encoding="utf-8")

    def clock(self) -> float:
        return time.time()

    def directory(self) -> str:
        """Where this actor keeps its corpus."""
        return self._dir

    def close(self) -> None:
        """Remove this actor's directory."""
        shutil.rmtree(self._dir, ignore_errors=True)

    def where(self) -> tuple[int, str]:
        """This actor's process id and Ray node id."""
        import ray

        return os.getpid(), str(ray.get_runtime_context().get_node_id())

    def run(self, spec: dict[str, Any]) -> dict[str, Any]:
        from lanes.lab.generators import run_generator

        return run_generator({**spec, "corpus": self._corpus})


def alive_nodes() -> list[Node]:
    """The cluster's alive nodes, worker nodes first (the head also runs Ray's services),
    each group in Ray's id order."""
    ray = _ray()
    found = []
    for n in ray.nodes():
        if not n.get("Alive"):
            continue
        head = "node:__internal_head__" in (n.get("Resources") or {})
        ip = str(n.get("NodeManagerAddress", "?"))
        node = Node(str(n["NodeID"]), ip, str(n.get("NodeManagerHostname") or ip))
        found.append((head, node.node_id, node))
    return [node for _, _, node in sorted(found, key=lambda t: (t[0], t[1]))]


class Pool:
    """The generator actors of one experiment: ``streams`` (the models of one machine's
    streams, in order) on each of the cluster's first ``machines`` nodes.

    Stream ``k`` of the run (:meth:`launch`) runs on actor ``k``: machine ``k // len(streams)``.
    """

    def __init__(self, config: Cluster, streams: Sequence[str], corpus: Mapping[str, Path]) -> None:
        ray = _ray()
        self.config = config
        self.actors: list[Any] = []
        self.actor_nodes: list[Node] = []
        self._connected = connect(config.ray)
        try:
            nodes = alive_nodes()
            want = config.machines or len(nodes)
            if want > len(nodes):
                raise LanesError(
                    BAD_ARGUMENT,
                    f"cluster.machines = {want}: the Ray cluster at {config.ray} has "
                    f"{len(nodes)} alive node(s)",
                )
            self.nodes = nodes[:want]
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            remote = ray.remote(num_cpus=0, max_restarts=0, max_task_retries=0)(_Generator)
            texts = {m: Path(p).read_text(encoding="utf-8") for m, p in corpus.items()}
            tag = uuid.uuid4().hex[:8]
            for m, node in enumerate(self.nodes):
                for s, model in enumerate(streams):
                    strategy = NodeAffinitySchedulingStrategy(node.node_id, soft=False)
                    self.actors.append(
                        remote.options(
                            name=f"lanes-generator-{tag}-{m}-{s}",
                            scheduling_strategy=strategy,
                        ).remote(f"{model}.jsonl", texts[model])
                    )
                    self.actor_nodes.append(node)
            self._ready()
        except BaseException:
            self.close()
            raise

    def _ready(self) -> None:
        """Wait until every actor answers (a node that cannot start one fails here)."""
        for actor, node in zip(self.actors, self.actor_nodes, strict=True):
            self._get(actor.where.remote(), node, 120.0)

    def _get(self, ref: Any, node: Node, timeout: float) -> Any:
        ray = _ray()
        try:
            return ray.get(ref, timeout=timeout)
        except ray.exceptions.GetTimeoutError:
            raise LanesError(
                BAD_ARGUMENT, f"a load generator on {node.label} did not answer in {timeout:g} s"
            ) from None
        except ray.exceptions.RayError as err:
            raise LanesError(
                BAD_ARGUMENT, f"a load generator on {node.label} failed: {_first_line(err)}"
            ) from None

    def clocks(self) -> dict[str, tuple[float, float]]:
        """Per node id: (offset, rtt) in seconds, the shortest round trip of its actors'."""
        best: dict[str, tuple[float, float]] = {}
        for actor, node in zip(self.actors, self.actor_nodes, strict=True):
            for _ in range(_CLOCK_SAMPLES):
                t0 = time.time()
                remote = float(self._get(actor.clock.remote(), node, 30.0))
                t1 = time.time()
                sample = (remote - (t0 + t1) / 2, t1 - t0)
                if node.node_id not in best or sample[1] < best[node.node_id][1]:
                    best[node.node_id] = sample
        return best

    def launch(
        self, specs: Sequence[tuple[int, dict[str, Any]]], deadline_s: float, closed: bool
    ) -> tuple[list[Result], dict[str, Any]]:
        """Run each ``(stream, spec)`` on actor ``stream``; the results in order and the run
        file's ``cluster`` block. A generator that dies or outlives ``deadline_s`` fails the
        run, naming its node."""
        ray = _ray()
        clocks = self.clocks()
        refs = [self.actors[k].run.remote(spec) for k, spec in specs]
        where = {ref: self.actor_nodes[k] for ref, (k, _) in zip(refs, specs, strict=True)}
        end = time.monotonic() + deadline_s
        pending = list(refs)
        while pending:
            left = end - time.monotonic()
            if left <= 0:
                names = sorted({where[r].label for r in pending})
                raise LanesError(
                    BAD_ARGUMENT,
                    f"a load generator ran past {deadline_s:.0f} s on {', '.join(names)}",
                )
            done, pending = ray.wait(pending, num_returns=1, timeout=min(left, 1.0))
            for ref in done:
                self._get(ref, where[ref], 1.0)  # raises for a dead actor, naming its node
        results = [Result(self._get(r, where[r], 1.0)) for r in refs]
        return results, self._report(specs, results, clocks, closed)

    def _report(
        self,
        specs: Sequence[tuple[int, dict[str, Any]]],
        results: Sequence[Result],
        clocks: Mapping[str, tuple[float, float]],
        closed: bool,
    ) -> dict[str, Any]:
        cfg = self.config
        per_node: dict[str, list[Result]] = {}
        for (k, _), r in zip(specs, results, strict=True):
            per_node.setdefault(self.actor_nodes[k].node_id, []).append(r)
        nodes, reasons = [], []
        for node in self.nodes:
            offset, rtt = clocks[node.node_id]
            entry: dict[str, Any] = {
                "node_id": node.node_id,
                "ip": node.ip,
                "host": node.host,
                "generators": len(per_node.get(node.node_id, [])),
                "clock_offset_ms": offset * 1e3,
                "clock_uncertainty_ms": rtt / 2 * 1e3,
            }
            if (abs(offset) + rtt / 2) * 1e3 > cfg.max_clock_offset_ms:
                reasons.append(
                    f"{node.label}: clock offset {offset * 1e3:+.2f} ± {rtt / 2 * 1e3:.2f} ms "
                    f"may exceed {cfg.max_clock_offset_ms:g} ms"
                )
            rs = per_node.get(node.node_id, [])
            if rs:
                total = rs[0] if len(rs) == 1 else merge(rs)
                d = total.data
                entry.update(
                    scheduled=d.get("scheduled"),
                    sent=d.get("sent"),
                    late_sends=d.get("late_sends"),
                    late_sends_fraction=d.get("late_sends_fraction"),
                    send_delay_ms={k: d["send_delay_ms"][k] for k in ("p50", "p99", "max")}
                    if "send_delay_ms" in d
                    else None,
                )
                late = float(d.get("late_sends_fraction") or 0.0)
                if not closed and late > cfg.max_late_sends:
                    reasons.append(
                        f"{node.label}: late sends {late:.1%} > {cfg.max_late_sends:.1%}"
                    )
            nodes.append(entry)
        return {
            "ray": cfg.ray,
            "machines": len(self.nodes),
            "max_late_sends": cfg.max_late_sends,
            "max_clock_offset_ms": cfg.max_clock_offset_ms,
            "nodes": nodes,
            "behind": bool(reasons),
            "reasons": reasons,
        }

    def close(self) -> None:
        """End the actors, and leave the cluster when this pool joined it."""
        ray = sys.modules.get("ray")
        if ray is None:
            return
        closing = []
        for actor in self.actors:
            with suppress(Exception):  # already dead: nothing to remove
                closing.append(actor.close.remote())
        with suppress(Exception):  # a dead actor's close fails: its files stay where it died
            ray.wait(closing, num_returns=len(closing), timeout=_CLOSE_S)
        for actor in self.actors:
            with suppress(Exception):  # already dead: nothing to end
                ray.kill(actor, no_restart=True)
        self.actors = []
        if self._connected and ray.is_initialized():
            ray.shutdown()
            self._connected = False


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__
