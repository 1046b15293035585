"""Clients of ``lanes arbiter``, the host's GPU scheduler daemon (docs/arbiter.md).

:class:`Client` holds device slots for this process from threads or asyncio; the wire protocol
is in :mod:`lanes.arbiter.protocol`, the behaviour while the daemon is down in
:mod:`lanes.arbiter.fallback`. A C client is in ``clients/c/lanes_arbiter.h``.
"""

from lanes.arbiter.client import ARBITER_UNAVAILABLE, Client, Held, Slot
from lanes.arbiter.fallback import FAIL_CLOSED, FAIL_OPEN
from lanes.arbiter.protocol import ARBITER_PROTOCOL, REJECT_CODES

__all__ = [
    "ARBITER_PROTOCOL",
    "ARBITER_UNAVAILABLE",
    "FAIL_CLOSED",
    "FAIL_OPEN",
    "REJECT_CODES",
    "Client",
    "Held",
    "Slot",
]
