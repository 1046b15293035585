"""``ClientConfig``: every knob of :mod:`lanes.client` in one typed object, checked at creation.

A bad value raises :class:`~lanes.errors.LanesError` (``bad_argument``) naming the key, the
value and the allowed range. Times are seconds except ``batch_timeout_ms`` (milliseconds, as the
knob people tune).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from lanes.errors import BAD_ARGUMENT, LanesError

MemberSource: TypeAlias = (
    Sequence[str] | Callable[[], Sequence[str]] | Callable[[], Awaitable[Sequence[str]]]
)
"""Where the members come from: a fixed list of base URLs (``http://host:port``), or a
function — plain or ``async`` — returning the current list, called every
``members_refresh_s`` (a fleet's member listing, for one)."""


@dataclass(frozen=True)
class ClientConfig:
    """How a :class:`~lanes.client.Client` batches, balances, retries and probes."""

    members: MemberSource
    """The servers: a list of base URLs, or a (sync or async) callable returning them."""
    batch_timeout_ms: float = 1.0
    """How long a partial batch waits for company before it is sent (0: send at once)."""
    max_batch_size: int | None = None
    """Rows per batch; None: the model's ``max_batch_size`` from the server's metadata (a
    value above the server's is cut to it)."""
    max_attempts: int = 3
    """Attempts per batch, the first included (only the retry rule's failures are retried)."""
    timeout_s: float | None = None
    """The default deadline of a call, from the call; None: no deadline (the model's own
    ``timeout_ms`` on the server may still apply)."""
    request_timeout_s: float = 60.0
    """The longest wait for one answer when the call has no deadline (a hung member)."""
    connect_timeout_s: float = 2.0
    """The longest wait for a connection; past it the attempt failed before sending."""
    probe_interval_s: float = 0.5
    """First wait before a dropped member's ``/v2/health/ready`` is probed; it doubles after
    each failed probe, up to ``probe_max_interval_s``."""
    probe_max_interval_s: float = 5.0
    """The longest wait between probes of a dropped member."""
    members_refresh_s: float = 5.0
    """How often a callable member source is called again."""
    stats_refresh_s: float = 1.0
    """How often each member's cost estimates are read (``GET /v2/models/{m}/stats``)."""
    ewma_alpha: float = 0.2
    """Weight of a new latency sample in the client's own per-member estimates."""
    max_connections: int = 64
    """Connections per member (the transport's pool)."""

    def __post_init__(self) -> None:
        if isinstance(self.members, (str, bytes)):
            _bad("members", self.members, "a list of URLs or a callable returning them")
        _check("batch_timeout_ms", self.batch_timeout_ms, 0.0, 10_000.0)
        if self.max_batch_size is not None:
            _check("max_batch_size", self.max_batch_size, 1, 1_000_000, integer=True)
        _check("max_attempts", self.max_attempts, 1, 100, integer=True)
        if self.timeout_s is not None:
            _check("timeout_s", self.timeout_s, 1e-6, 86_400.0, open_low=False)
        _check("request_timeout_s", self.request_timeout_s, 1e-3, 86_400.0)
        _check("connect_timeout_s", self.connect_timeout_s, 1e-3, 600.0)
        _check("probe_interval_s", self.probe_interval_s, 1e-3, 3_600.0)
        _check("probe_max_interval_s", self.probe_max_interval_s, self.probe_interval_s, 3_600.0)
        _check("members_refresh_s", self.members_refresh_s, 1e-3, 86_400.0)
        _check("stats_refresh_s", self.stats_refresh_s, 1e-3, 86_400.0)
        _check("ewma_alpha", self.ewma_alpha, 1e-6, 1.0)
        _check("max_connections", self.max_connections, 1, 100_000, integer=True)


def _bad(key: str, value: object, allowed: str) -> None:
    raise LanesError(BAD_ARGUMENT, f"ClientConfig.{key} = {value!r}: must be {allowed}")


def _check(
    key: str,
    value: object,
    low: float,
    high: float,
    *,
    integer: bool = False,
    open_low: bool = False,
) -> None:
    kind = "an integer" if integer else "a number"
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok:
        _bad(key, value, f"{kind} from {low:g} to {high:g}")
    number = float(value)  # type: ignore[arg-type]
    if not (math.isfinite(number) and low <= number <= high) or (open_low and number == low):
        _bad(key, value, f"{kind} from {low:g} to {high:g}")
