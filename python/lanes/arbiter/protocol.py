"""The arbiter wire protocol, version 1, in Python: encoders for the client's messages and a
decoder for the daemon's (docs/arbiter-protocol.md is the contract; the daemon's codec is
crates/lanes-arbiter/src/protocol.rs).

Framing: every message is one frame, a 4-byte big-endian length N (1 <= N <= 65536) and N
bytes. Inside, byte 0 is the type and the fields follow in order: big-endian integers, ``str`` as
a u16 byte length and UTF-8 bytes (names at most 255 bytes), lists as a u16 count and the items.
A frame with trailing bytes, one cut short or with bad UTF-8 is malformed: :func:`decode` raises
:class:`~lanes.errors.LanesError` with code ``arbiter_protocol``.

The encoders return whole frames (prefix included), ready to write.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any

from lanes.errors import LanesError

VERSION = 1
"""The protocol version this client speaks."""
MAX_FRAME = 65536
"""Largest frame payload, bytes."""
MAX_NAME = 255
"""Longest service, model or device name, UTF-8 bytes."""

HELLO, ACQUIRE, RELEASE, CANCEL, STATS = 0x01, 0x02, 0x03, 0x04, 0x05
WELCOME, GRANT, REJECT, RELEASED, STATS_REPLY, REVOKED, ERROR = (
    0x81,
    0x82,
    0x83,
    0x84,
    0x85,
    0x86,
    0x8F,
)

ARBITER_PROTOCOL = "arbiter_protocol"
"""A frame that breaks the protocol (from either side), or the daemon's ERROR message."""

REJECT_CODES: dict[int, str] = {
    1: "arbiter_deadline",
    2: "arbiter_overload",
    3: "arbiter_no_such_device",
    4: "arbiter_bad_request",
    5: "arbiter_cancelled",
    6: "arbiter_shutting_down",
}
"""REJECT reason → the stable :class:`~lanes.errors.LanesError` code a slot raises."""

ERROR_NAMES: dict[int, str] = {
    1: "malformed",
    2: "too_large",
    3: "unsupported_version",
    4: "out_of_order",
    5: "unknown_type",
}
"""ERROR code → its name in the protocol document."""


@dataclass(frozen=True)
class Welcome:
    """0x81: the handshake's answer; ``devices[i]`` is device number ``i`` in grants."""

    version: int
    session: int
    devices: tuple[str, ...]


@dataclass(frozen=True)
class Grant:
    """0x82: acquire ``id`` may run on ``device`` now; it queued ``wait_ns`` in the daemon."""

    id: int
    device: int
    wait_ns: int


@dataclass(frozen=True)
class Reject:
    """0x83: acquire ``id`` will not run (``reason``: a key of :data:`REJECT_CODES`)."""

    id: int
    reason: int
    message: str


@dataclass(frozen=True)
class Released:
    """0x84: release ``id`` was taken."""

    id: int


@dataclass(frozen=True)
class StatsReply:
    """0x85: the daemon's state as JSON."""

    stats: dict[str, Any]


@dataclass(frozen=True)
class Revoked:
    """0x86: grant ``id`` was held past ``--max-hold`` and taken back."""

    id: int


@dataclass(frozen=True)
class Error:
    """0x8F: the daemon found this connection at fault and closes it."""

    code: int
    message: str


Message = Welcome | Grant | Reject | Released | StatsReply | Revoked | Error


def _malformed(why: str) -> LanesError:
    return LanesError(ARBITER_PROTOCOL, f"malformed arbiter frame: {why}")


def _str(value: str, what: str) -> bytes:
    raw = value.encode("utf-8")
    if len(raw) > MAX_NAME:
        raise LanesError(
            "bad_argument", f"{what} {value[:40]!r}... is {len(raw)} bytes; at most {MAX_NAME}"
        )
    return struct.pack(">H", len(raw)) + raw


def _frame(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


def hello(pid: int, service: str) -> bytes:
    """HELLO: version, pid, service name."""
    return _frame(struct.pack(">BHI", HELLO, VERSION, pid) + _str(service, "service name"))


def acquire(
    id: int,
    model: str,
    batch: int,
    cost_ns: int = 0,
    timeout_ns: int = 0,
    devices: tuple[int, ...] = (),
) -> bytes:
    """ACQUIRE: id, model, batch (>= 1), cost_ns (0: estimate), timeout_ns (0: none), devices."""
    return _frame(
        struct.pack(">BQ", ACQUIRE, id)
        + _str(model, "model name")
        + struct.pack(f">IQQH{len(devices)}H", batch, cost_ns, timeout_ns, len(devices), *devices)
    )


def release(id: int, run_ns: int) -> bytes:
    """RELEASE: grant id, measured device time (0: not measured)."""
    return _frame(struct.pack(">BQQ", RELEASE, id, run_ns))


def cancel(id: int) -> bytes:
    """CANCEL: withdraw queued acquire ``id``."""
    return _frame(struct.pack(">BQ", CANCEL, id))


def stats() -> bytes:
    """STATS: ask for the daemon's state."""
    return _frame(bytes([STATS]))


class _Reader:
    """Reads fields off one payload, failing on anything cut short."""

    def __init__(self, payload: bytes) -> None:
        self.payload = payload
        self.at = 1

    def take(self, fmt: str) -> tuple[int, ...]:
        size = struct.calcsize(fmt)
        if self.at + size > len(self.payload):
            raise _malformed(f"cut short at byte {self.at} (type 0x{self.payload[0]:02x})")
        values = struct.unpack_from(fmt, self.payload, self.at)
        self.at += size
        return values

    def text(self, limit: int | None = MAX_NAME) -> str:
        (n,) = self.take(">H")
        if limit is not None and n > limit:
            raise _malformed(f"a name of {n} bytes at byte {self.at - 2}; at most {limit}")
        return self.blob(n).decode("utf-8", errors="strict")

    def blob(self, n: int) -> bytes:
        if self.at + n > len(self.payload):
            raise _malformed(f"cut short at byte {self.at} (type 0x{self.payload[0]:02x})")
        raw = self.payload[self.at : self.at + n]
        self.at += n
        return raw

    def done(self) -> None:
        if self.at != len(self.payload):
            extra = len(self.payload) - self.at
            raise _malformed(f"{extra} trailing bytes after type 0x{self.payload[0]:02x}")


def decode(payload: bytes) -> Message:
    """Decodes one daemon → client frame's payload (without its length prefix)."""
    if not payload:
        raise _malformed("an empty frame")
    r = _Reader(payload)
    kind = payload[0]
    msg: Message
    try:
        if kind == WELCOME:
            version, session, n = r.take(">HQH")
            msg = Welcome(version, session, tuple(r.text() for _ in range(n)))
        elif kind == GRANT:
            msg = Grant(*r.take(">QHQ"))
        elif kind == REJECT:
            id, reason = r.take(">QH")
            msg = Reject(id, reason, r.text(limit=None))
        elif kind == RELEASED:
            msg = Released(*r.take(">Q"))
        elif kind == STATS_REPLY:
            (n,) = r.take(">I")
            value = json.loads(r.blob(n).decode("utf-8"))
            if not isinstance(value, dict):
                raise _malformed("STATS_REPLY JSON is not an object")
            msg = StatsReply(value)
        elif kind == REVOKED:
            msg = Revoked(*r.take(">Q"))
        elif kind == ERROR:
            (code,) = r.take(">H")
            msg = Error(code, r.text(limit=None))
        else:
            raise _malformed(f"unknown type 0x{kind:02x}")
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _malformed(f"type 0x{kind:02x}: {e}") from None
    r.done()
    return msg
