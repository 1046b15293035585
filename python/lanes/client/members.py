"""The members a client balances over: where they come from, and which are up.

**Source.** ``ClientConfig.members`` is a list of base URLs, or a plain or ``async`` callable
returning the current list (a fleet's listing), called again every ``members_refresh_s``. New
URLs join as up; URLs no longer listed leave (their batches in flight still finish). A source
that raises keeps the last list.

**Health, half-open.** A member is *up* (balanced over) or *down*. It goes down on a
connection failure, on any 503 (not ready, draining), or when a :class:`lanes.probe.Event`
given to :meth:`Members.observe` (the TCP prober, ``lanes probe``) says its ``host:port`` is not
up. A down member gets no batches; after ``probe_interval_s`` one probe — a single
``GET /v2/health/ready``, the half-open trial — decides: 200 brings it back up, anything else
keeps it down and doubles the wait (at most ``probe_max_interval_s``). Each change is reported
as a :class:`lanes.probe.Event` (``target`` the URL, ``state`` ``up``/``down``, ``round`` the
probes it took) to ``on_event``, the prober's own event type.

**Estimates.** Every ``stats_refresh_s`` the up members' cost estimates for the models in use
are read (``GET /v2/models/{m}/stats``, its ``"cost_estimates"``; see
lanes.client.balancer).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lanes.client.balancer import CostModel
from lanes.client.config import ClientConfig
from lanes.client.errors import AttemptFailed
from lanes.client.transport import Transport
from lanes.probe import Event

log = logging.getLogger("lanes.client")


def normalize(url: str) -> str:
    """``host:port`` or ``http://host:port/`` → ``http://host:port``."""
    url = url.strip().rstrip("/")
    return url if "://" in url else f"http://{url}"


@dataclass(eq=False)
class Member:
    """One server as the client sees it."""

    url: str
    up: bool = True
    reason: str | None = None
    outstanding_s: float = 0.0
    inflight: int = 0
    last_pick: int = 0
    batches: int = 0
    rows: int = 0
    probes: int = 0
    costs: dict[str, CostModel] = field(default_factory=dict)
    probe: asyncio.Task[None] | None = None

    def cost_model(self, model: str) -> CostModel:
        return self.costs.setdefault(model, CostModel())

    def start(self, cost: float, rows: int, pick: int) -> None:
        """A batch of estimated ``cost`` leaves for this member."""
        self.outstanding_s += cost
        self.inflight += 1
        self.last_pick = pick
        self.batches += 1
        self.rows += rows

    def finish(self, cost: float) -> None:
        """The batch answered (or failed)."""
        self.inflight -= 1
        self.outstanding_s = 0.0 if self.inflight == 0 else max(0.0, self.outstanding_s - cost)


@dataclass(frozen=True)
class MemberState:
    """A snapshot of one member: health, work in flight, and what it was sent."""

    url: str
    up: bool
    reason: str | None
    outstanding_s: float
    inflight: int
    batches: int
    rows: int


class Members:
    """The member set of one client: its source, health and estimates (module docs)."""

    def __init__(
        self,
        config: ClientConfig,
        transport: Transport,
        on_event: Callable[[Event], None] | None = None,
    ) -> None:
        self._config = config
        self._transport = transport
        self._on_event = on_event
        self._members: dict[str, Member] = {}
        self._listed = False
        self.models: set[str] = set()
        """Models whose estimates are kept fresh."""

    def up(self) -> list[Member]:
        return [m for m in self._members.values() if m.up]

    def all(self) -> list[Member]:
        return list(self._members.values())

    def states(self) -> list[MemberState]:
        return [
            MemberState(m.url, m.up, m.reason, m.outstanding_s, m.inflight, m.batches, m.rows)
            for m in self._members.values()
        ]

    async def refresh(self) -> None:
        """Read the source again (a list is read once)."""
        source = self._config.members
        if self._listed and not callable(source):
            return
        try:
            if callable(source):
                listed: Any = source()
                if inspect.isawaitable(listed):
                    listed = await listed
            else:
                listed = source
            urls = [normalize(u) for u in listed]
        except Exception as err:  # a fleet listing that failed: keep the last list
            log.warning("member source failed: %s: %s", type(err).__name__, err)
            return
        self._listed = True
        for url in urls:
            if url not in self._members:
                self._members[url] = Member(url)
        for url in list(self._members):
            if url not in urls:
                gone = self._members.pop(url)
                if gone.probe is not None:
                    gone.probe.cancel()

    def drop(self, member: Member, reason: str) -> None:
        """Take ``member`` out of balancing and start its half-open probing."""
        if not member.up:
            return
        member.up = False
        member.reason = reason
        log.info("member %s down: %s", member.url, reason)
        self._emit(member, "down", "up")
        if self._members.get(member.url) is member:
            member.probe = asyncio.get_running_loop().create_task(self._half_open(member))

    def observe(self, event: Event) -> None:
        """Apply an event of the TCP prober (lanes.probe): a member whose ``host:port`` is
        ``event.target`` goes down when the event's state is not ``up``. (Coming back up is
        decided by this client's own readiness probe: an open port is not a ready server.)"""
        if event.state == "up":
            return
        for m in self.all():
            if m.url.split("://", 1)[-1] == event.target:
                self.drop(m, f"prober: {event.state}")

    async def _half_open(self, member: Member) -> None:
        wait = self._config.probe_interval_s
        while True:
            await asyncio.sleep(wait)
            member.probes += 1
            try:
                await self._transport.get(
                    member.url, "/v2/health/ready", self._config.connect_timeout_s
                )
            except AttemptFailed as failure:
                member.reason = f"probe: {failure.message}"
                wait = min(2 * wait, self._config.probe_max_interval_s)
                continue
            member.up, member.reason, member.probe = True, None, None
            member.outstanding_s, member.costs = 0.0, {}
            log.info("member %s up after %d probes", member.url, member.probes)
            self._emit(member, "up", "down")
            member.probes = 0
            return

    def _emit(self, member: Member, state: str, previous: str) -> None:
        if self._on_event is None:
            return
        event = Event(member.url, None, state, previous, time.time(), member.probes)
        try:
            self._on_event(event)
        except Exception:
            log.exception("on_event failed")

    async def read_estimates(self) -> None:
        """Refresh the server cost estimates of every up member for the models in use."""
        jobs = [self._estimates(m, model) for m in self.up() for model in self.models]
        await asyncio.gather(*jobs)

    async def _estimates(self, member: Member, model: str) -> None:
        try:
            body = await self._transport.get(
                member.url, f"/v2/models/{model}/stats", self._config.connect_timeout_s
            )
            rows = body["model_stats"][0].get("cost_estimates", [])
            member.cost_model(model).server = {
                int(e["batch_size"]): int(e["ns"]) / 1e9 for e in rows if int(e["ns"]) > 0
            }
        except (AttemptFailed, KeyError, IndexError, TypeError, ValueError, AttributeError):
            return  # no estimates from this member now: the client's own measurements serve

    async def run(self) -> None:
        """Background upkeep: the source every ``members_refresh_s``, estimates every
        ``stats_refresh_s``; runs until cancelled."""
        c = self._config
        next_list = next_stats = 0.0
        loop = asyncio.get_running_loop()
        while True:
            now = loop.time()
            if now >= next_list:
                await self.refresh()
                next_list = now + c.members_refresh_s
            if now >= next_stats:
                await self.read_estimates()
                next_stats = now + c.stats_refresh_s
            await asyncio.sleep(max(0.0, min(next_list, next_stats) - loop.time()))

    async def close(self) -> None:
        for m in self._members.values():
            if m.probe is not None:
                m.probe.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await m.probe
