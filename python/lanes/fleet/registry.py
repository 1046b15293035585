"""The fleet's registry: a named, detached Ray actor that lists the members for clients.

``lanes-fleet:<name>`` in the Ray namespace ``lanes`` holds the fleet's configuration and its
placement plan, and hears from every member each time it starts (its URL, server pid, node)
and each time its readiness changes. A member's starts minus one are its restarts. Clients ask
it for the ready members' URLs (:func:`lanes.fleet.members`) in one call; ``lanes fleet
status`` adds a live check of each member.

The registry keeps its state in memory; it is not restarted if its process dies (the fleet
then has to be brought down and up again: docs/fleet.md).
"""

from __future__ import annotations

import time
from typing import Any


def actor_name(fleet: str) -> str:
    """The registry's Ray actor name."""
    return f"lanes-fleet:{fleet}"


def member_name(fleet: str, index: int) -> str:
    """Member ``index``'s Ray actor name."""
    return f"lanes-fleet:{fleet}:member-{index}"


class Registry:
    """The actor (wrapped with ``ray.remote`` by :mod:`lanes.fleet.control`)."""

    def __init__(self, config: dict[str, Any], plan: list[dict[str, Any]]) -> None:
        self.config = config
        self.created = time.time()
        self.members: dict[int, dict[str, Any]] = {
            int(slot["index"]): {**slot, "starts": 0, "ready": False, "info": None} for slot in plan
        }

    def previous_port(self, index: int) -> int | None:
        """The port member ``index`` served on before (None: never started)."""
        info = self.members[index]["info"]
        return None if info is None else int(info["url"].rsplit(":", 1)[1])

    def started(self, index: int, info: dict[str, Any]) -> None:
        member = self.members[index]
        member["starts"] += 1
        member["info"] = info
        member["ready"] = True
        member["since"] = time.time()

    def health(self, index: int, ready: bool) -> None:
        self.members[index]["ready"] = ready

    def urls(self) -> list[str]:
        """The URLs of the members whose last word was ready, by index."""
        return [
            m["info"]["url"]
            for _, m in sorted(self.members.items())
            if m["ready"] and m["info"] is not None
        ]

    def snapshot(self) -> dict[str, Any]:
        """Configuration, creation time and every member's record."""
        return {
            "config": self.config,
            "created": self.created,
            "members": [dict(m) for _, m in sorted(self.members.items())],
        }
