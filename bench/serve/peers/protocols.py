"""Fixed-rate load from two clients nobody here wrote: oha over REST, ghz over KServe v2 gRPC.

The race's ``grpc`` step compares a server's REST and gRPC ports with these two, each at a
fixed request rate for a bounded time, so that neither protocol is measured with lanes' own
client:

- **REST**: ``oha -q RATE --latency-correction -w -z Ts -c C`` with the race's JSON body;
  latency counts from each request's intended send time; requests in flight at the end are
  waited for (``-w``), and the ones oha had not sent yet (its "aborted due to deadline") are
  not counted as errors.
- **gRPC**: ``ghz --rps RATE -z Ts -c C --connections K`` calling
  ``inference.GRPCInferenceService/ModelInfer`` from the KServe v2 proto
  (``crates/lanes-kserve/proto/grpc_predict_v2.proto``), the input's bytes in
  ``raw_input_contents`` as ``tritonclient.grpc`` sends them. ghz's rate limiter hands a
  token to one of its C workers; a worker waits for its answer before taking the next, so
  latency counts from the actual send (no correction for coordinated omission) and a
  saturated server shows as an achieved rate below the asked one.

Both reports are read into one shape (:func:`read_oha`, :func:`read_ghz`): ``latency_ms``
(p50, p90, p99), ``rps`` achieved, ``requests``, ``errors`` (by class). A step passes
(:func:`passes`) with no error, p99 under the SLO and at least :data:`ACHIEVED_SHARE` of the
asked rate achieved.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import numpy as np

SERVICE = "inference.GRPCInferenceService/ModelInfer"
CONCURRENCY = 128  # client workers (oha connections, ghz workers): the race's -c 128
GRPC_CONNECTIONS = 16  # HTTP/2 connections ghz spreads its workers over
ACHIEVED_SHARE = 0.9  # a step passes only if it achieved this share of the asked rate
REQUEST_TIMEOUT = "5s"
OHA_UNSENT = "aborted due to deadline"


def grpc_request(model: str, input_name: str, x: np.ndarray) -> dict[str, Any]:
    """A ``ModelInferRequest`` in protobuf's JSON mapping (bytes as base64), ``x`` FP32."""
    raw = np.ascontiguousarray(x, dtype="<f4").tobytes()
    return {
        "model_name": model,
        "inputs": [{"name": input_name, "datatype": "FP32", "shape": list(x.shape)}],
        "raw_input_contents": [base64.b64encode(raw).decode("ascii")],
    }


def ghz_command(
    ghz: Path, proto: Path, target: str, data: Path, rate: float, seconds: float, out: Path
) -> list[str]:
    """One bounded fixed-rate ghz run against ``target`` (``host:port``), JSON to ``out``."""
    return [
        str(ghz),
        "--insecure",
        "--proto",
        str(proto),
        "--call",
        SERVICE,
        "--data-file",
        str(data),
        "--rps",
        f"{rate:g}",
        "-z",
        f"{seconds:g}s",
        "--duration-stop",
        "wait",
        "-c",
        str(CONCURRENCY),
        "--connections",
        str(GRPC_CONNECTIONS),
        "--timeout",
        REQUEST_TIMEOUT,
        "--format",
        "json",
        "--output",
        str(out),
        target,
    ]


def oha_post(
    oha: Path, url: str, body: Path, seconds: float, connections: int, *flags: str
) -> list[str]:
    """oha POSTing the JSON ``body`` to ``url`` for ``seconds`` over ``connections``, JSON
    report on stdout; ``flags`` go before the URL (closed loop when there is no ``-q``)."""
    head = [str(oha), "-z", f"{seconds:g}s", "-c", str(connections), *flags]
    post = ["-m", "POST", "-T", "application/json", "-D", str(body)]
    return [*head, *post, "--no-tui", "--output-format", "json", url]


def oha_command(oha: Path, url: str, body: Path, rate: float, seconds: float) -> list[str]:
    """One bounded fixed-rate oha run (:func:`oha_post` at ``-q rate``)."""
    fixed = ["-q", f"{rate:g}", "--latency-correction", "--wait-ongoing-requests-after-deadline"]
    return oha_post(oha, url, body, seconds, CONCURRENCY, *fixed, "-t", REQUEST_TIMEOUT)


def read_ghz(report: dict[str, Any]) -> dict[str, Any]:
    """ghz's JSON report (latencies in ns) in the common shape."""
    spread = report.get("latencyDistribution") or []
    pct = {int(d["percentage"]): d["latency"] / 1e6 for d in spread}
    codes = dict(report.get("statusCodeDistribution") or {})
    not_ok = sum(n for code, n in codes.items() if code != "OK")
    return {
        "latency_ms": {"p50": pct.get(50, 0.0), "p90": pct.get(90, 0.0), "p99": pct.get(99, 0.0)},
        "rps": float(report.get("rps", 0.0)),
        "requests": int(report.get("count", 0)),
        "errors": {"status": not_ok},  # ghz files every failed call under its gRPC code
        "status": codes,
    }


def read_oha(report: dict[str, Any]) -> dict[str, Any]:
    """oha's JSON report (latencies in s) in the common shape."""
    pct = report.get("latencyPercentiles") or {}
    codes = {str(k): int(v) for k, v in (report.get("statusCodeDistribution") or {}).items()}
    errors = dict(report.get("errorDistribution") or {})
    # Sends the rate limiter still held when the time was up (with ``-w`` a sent request is
    # waited for): not answers, so not errors.
    aborted = errors.pop(OHA_UNSENT, 0)
    return {
        "latency_ms": {k: float(pct.get(k) or 0.0) * 1000 for k in ("p50", "p90", "p99")},
        "rps": float(report["summary"].get("requestsPerSec") or 0.0),
        "requests": sum(codes.values()),
        "errors": {
            "status": sum(n for code, n in codes.items() if not code.startswith("2")),
            "other": sum(errors.values()),
        },
        "unsent_at_deadline": aborted,
        "status": codes,
    }


def passes(result: dict[str, Any], rate: float, slo_ms: float) -> bool:
    """No error, p99 under ``slo_ms``, and the asked ``rate`` (nearly) achieved."""
    errors = sum(result["errors"].values())
    achieved = result["rps"] >= ACHIEVED_SHARE * rate
    return bool(errors == 0 and result["latency_ms"]["p99"] < slo_ms and achieved)


def write_json(path: Path, value: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))
    return path
