"""Typed face of the native module ``lanes._core`` (crates/lanes-py), checked against the build
by ``python -m mypy.stubtest lanes._core``.

Errors are raised as :class:`lanes.errors.LanesError` with a stable ``code``
(e.g. ``"unknown_policy"``, ``"bad_policy_argument"``). Scenario dicts are the normalised form
produced by :meth:`lanes.sim.Scenario.to_core`; result dicts are described in docs/sim.md.
"""

from typing import Any, final

__all__ = [
    "LoadRun",
    "capacity",
    "load_merge",
    "load_percentiles",
    "load_start",
    "parse_policy",
    "policy_names",
    "simulate",
    "version",
]

def version() -> str:
    """The version of the native module (the Cargo workspace version)."""

def policy_names() -> list[str]:
    """Policy names for help texts, e.g. ``["independent", "semaphore", "fifo", "limit:K"]``."""

def parse_policy(name: str) -> str:
    """The canonical form of a policy name; raises ``LanesError("unknown_policy", ...)``."""

def simulate(
    scenario: dict[str, Any],
    points: list[tuple[str, float, int]],
    requests: int,
    threads: int = 0,
) -> list[dict[str, Any]]:
    """Simulate every ``(policy, load, seed)`` point, in parallel on ``threads`` threads
    (0: all cores); one result dict per point, in the same order."""

def capacity(
    scenario: dict[str, Any],
    policy: str,
    seeds: list[int],
    requests: int,
    threads: int = 0,
) -> dict[str, float]:
    """``{"overall": load, "every_service": load}``: the highest load in (0, 1] at which at
    least 99 % of requests (overall; of every service) finish within their SLO, found by
    bisection to 0.01; each probed load is simulated once per seed."""

@final
class LoadRun:
    """A load run in progress, from :func:`load_start`."""

    def progress(self) -> dict[str, Any]:
        """``{"elapsed_s", "sent", "replies", "errors", "finished"}``."""

    def stop(self) -> None:
        """End the run now; requests in flight are abandoned."""

    def wait(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` seconds (GIL released); true once the run has ended."""

    def result(self) -> str:
        """The result as JSON text (waits for the end; writes the send log if asked)."""

def load_start(spec: dict[str, Any]) -> LoadRun:
    """Check a run spec (see lanes.bench.engine.spec), open the connections, start the run.
    Raises ``LanesError`` (``bad_url``, ``bad_argument``, ``corpus_invalid``,
    ``connect_failed``) before any request is sent."""

def load_merge(results: list[str]) -> str:
    """Merge JSON results of side-by-side runs into one JSON result (histograms add exactly)."""

def load_percentiles(result: str, which: str) -> str:
    """HdrHistogram percentile-distribution text of ``latency`` or ``service_time`` (ms)."""
