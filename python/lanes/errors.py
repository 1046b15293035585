"""The one error type of lanes.

Everything a user can get wrong (a scenario file, a command-line value, a policy name) raises
:class:`LanesError` with a stable machine-readable ``code`` and a one-line ``message`` that names
the key, the value and what is allowed. The native module ``lanes._core`` raises this same class,
so callers catch one type and branch on ``code``, never on message text. The command line prints
``lanes <command>: error: <message>`` and exits 2.
"""

from __future__ import annotations

# Codes raised by the Python side. The native module adds its own (``unknown_policy``,
# ``bad_policy_argument``, ``bad_url``, ``connect_failed``, ``result_invalid``, ...); a code,
# once published, never changes meaning.
SCENARIO_NOT_FOUND = "scenario_not_found"
"""A scenario that is neither a file nor a built-in name."""
SCENARIO_INVALID = "scenario_invalid"
"""A scenario file that is not valid TOML or breaks a rule of the format (docs/sim.md)."""
TRACE_INVALID = "trace_invalid"
"""An arrival-trace file that cannot be read or parsed."""
BAD_ARGUMENT = "bad_argument"
"""A command-line or API argument out of its allowed range."""
MISSING_DEPENDENCY = "missing_dependency"
"""An optional extra (e.g. matplotlib for plots) that is not installed."""
OUTPUT_FAILED = "output_failed"
"""An output file that cannot be written."""
CORPUS_INVALID = "corpus_invalid"
"""A load-test corpus (folder, JSONL line, image or array) that cannot be used."""
REPOSITORY_INVALID = "model_repository_invalid"
"""A model repository (its folder or a ``model.toml``) that cannot be read or breaks a rule of
its format (docs: :mod:`lanes.models.repository`)."""
DEVICE_UNAVAILABLE = "device_unavailable"
"""A device a model replica was placed on that its runtime cannot use (no CUDA provider, no
such GPU)."""
BAD_INPUT = "bad_input"
"""A request input a model cannot use (an image that does not decode, a tensor of the wrong
datatype or shape); the server answers 400."""
RESULTS_INVALID = "results_invalid"
"""A lab results folder (docs/lab.md) that is missing, holds no runs, or has a run file that
cannot be read; or a report baseline that is not one of its variants."""
EXPERIMENT_INVALID = "experiment_invalid"
"""A lab experiment file (docs/lab.md) that is not valid TOML, has an unknown key, or a value out
of its allowed range; or a results folder that holds a different experiment."""

RAY_UNAVAILABLE = "ray_unavailable"
"""No Ray cluster to join at the given address (``lanes fleet``)."""
FLEET_EXISTS = "fleet_exists"
"""``lanes fleet up`` for a fleet name that is already up on the cluster."""
FLEET_NOT_FOUND = "fleet_not_found"
"""No fleet of that name on the cluster (``lanes fleet status``, ``lanes.fleet.members``)."""
MEMBER_NOT_READY = "member_not_ready"
"""A fleet member whose ``lanes serve`` failed or was not ready in time; ``up`` took the fleet
down again."""

# Raised by ``lanes.client`` (its retry rule and statuses: lanes/client/errors.py).
NO_MEMBERS = "no_members"
"""The client's member source gave none, or none is up (all dropped by health)."""
UNKNOWN_MODEL = "unknown_model"
"""The server has no such model (404)."""
DEADLINE_EXCEEDED = "deadline_exceeded"
"""A call's deadline passed: before sending (nothing sent), queued on the server (504), or while
waiting for the answer."""
QUEUE_FULL = "queue_full"
"""Every attempt was refused with 429 (the server's queue full)."""
UNAVAILABLE = "unavailable"
"""Every attempt failed before reaching a device (connection refused, 503 not ready or
draining)."""
CONNECTION_LOST = "connection_lost"
"""The connection broke after the request was sent: it may have run, so it is not retried."""
MODEL_FAILED = "model_failed"
"""The model raised (500), or the server answered another error status."""
BAD_RESPONSE = "bad_response"
"""An answer the client cannot decode."""
CLIENT_CLOSED = "client_closed"
"""The client was closed while the call waited."""


class LanesError(Exception):
    """A user-facing error: a stable ``code`` and a one-line ``message``."""

    code: str
    message: str

    def __init__(self, code: str, message: str) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"LanesError({self.code!r}, {self.message!r})"
