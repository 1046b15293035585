"""What can go wrong in a call, as stable codes, and the one rule for retrying.

Every failure a caller sees is a :class:`ClientError` — a :class:`~lanes.errors.LanesError`, so
``except LanesError`` catches it and code branches on ``err.code``, never on the message. The
codes (kept with every other code in :mod:`lanes.errors`; once published, a code never changes
meaning):

====================  ================================================================
``no_members``        the member source gave none, or none is up (all dropped by health)
``unknown_model``     the server has no such model (404)
``bad_input``         inputs the model cannot take, found by the client or the server (400/413)
``deadline_exceeded`` the call's deadline passed: before sending (nothing was sent), while
                      queued on the server (504), or while waiting for the answer
``queue_full``        every attempt was refused with 429 (queue full)
``unavailable``       every attempt failed before reaching a device (connection refused,
                      503 not ready or draining)
``connection_lost``   the connection broke after the request was sent: it may have run, so
                      it is not retried
``model_failed``      the model raised (500), or the server answered another error status
``bad_response``      an answer the client cannot decode
``client_closed``     the client was closed
====================  ================================================================

**The retry rule** (:func:`retryable`): an attempt is retried — on another member when there
is one — only when the request certainly never reached a device:

- the connection could not be made (refused, reset or timed out while connecting): nothing
  was sent;
- 429: ``lanes serve`` refuses at admission, before queueing;
- 503 whose message says ``not ready`` (loading, warming, draining): refused at the door.

Never retried: 500 (the batch ran), 504 (the deadline is gone), a 503 of a drain that timed out
(those requests were queued or running), a connection lost or a timeout after the request was
sent (it may be running), 4xx. Attempts are bounded by ``ClientConfig.max_attempts`` and by the
deadline. A member is dropped (:func:`drops_member`) on a connection failure of any kind and on
any 503.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lanes.errors import (
    BAD_INPUT,
    BAD_RESPONSE,
    CONNECTION_LOST,
    DEADLINE_EXCEEDED,
    MODEL_FAILED,
    QUEUE_FULL,
    UNAVAILABLE,
    UNKNOWN_MODEL,
    LanesError,
)

CONNECT, HTTP, LOST, TIMEOUT, UNDECODABLE = "connect", "http", "lost", "timeout", "undecodable"
"""Kinds of :class:`AttemptFailed`."""

_NOT_READY = re.compile(r"^(model '.*' )?not ready\b")


@dataclass
class AttemptFailed(Exception):
    """One attempt at one member failed; what a transport raises.

    ``kind``: ``connect`` (no connection: nothing sent), ``http`` (an error ``status``),
    ``lost`` (the connection broke after sending), ``timeout`` (no answer in time after
    sending), ``undecodable`` (an answer that cannot be read).
    """

    kind: str
    message: str
    status: int | None = None

    def __str__(self) -> str:
        return self.message

    @property
    def sent(self) -> bool:
        """Whether the request may have reached the server."""
        return self.kind != CONNECT


def retryable(failure: AttemptFailed) -> bool:
    """True when the attempt never reached a device (the module's retry rule)."""
    if failure.kind == CONNECT:
        return True
    if failure.kind != HTTP:
        return False
    if failure.status == 429:
        return True
    return failure.status == 503 and bool(_NOT_READY.match(failure.message))


def drops_member(failure: AttemptFailed) -> bool:
    """True when the member should leave the balancing set until a probe finds it ready."""
    return failure.kind in (CONNECT, LOST) or failure.status == 503


def code_of(failure: AttemptFailed) -> str:
    """The :class:`ClientError` code a final failed attempt becomes."""
    if failure.kind == CONNECT:
        return UNAVAILABLE
    if failure.kind == LOST:
        return CONNECTION_LOST
    if failure.kind == TIMEOUT:
        return DEADLINE_EXCEEDED
    if failure.kind == UNDECODABLE:
        return BAD_RESPONSE
    return {
        400: BAD_INPUT,
        413: BAD_INPUT,
        404: UNKNOWN_MODEL,
        429: QUEUE_FULL,
        503: UNAVAILABLE,
        504: DEADLINE_EXCEEDED,
    }.get(failure.status or 500, MODEL_FAILED)


class ClientError(LanesError):
    """A failed call: a stable ``code`` (module docs), a one-line ``message``, the HTTP
    ``status`` of the last attempt (None when there was no answer), the ``member`` URL it went
    to (None when nothing was sent), ``attempts`` made, and whether the request may have been
    ``sent``."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        status: int | None = None,
        member: str | None = None,
        attempts: int = 0,
        sent: bool = False,
    ) -> None:
        super().__init__(code, message)
        self.status = status
        self.member = member
        self.attempts = attempts
        self.sent = sent

    @classmethod
    def of(cls, failure: AttemptFailed, member: str, attempts: int) -> ClientError:
        """The error a call ends with after ``failure`` at ``member``."""
        return cls(
            code_of(failure),
            f"{member}: {failure.message}"
            + (f" (after {attempts} attempts)" if attempts > 1 else ""),
            status=failure.status,
            member=member,
            attempts=attempts,
            sent=failure.sent,
        )
