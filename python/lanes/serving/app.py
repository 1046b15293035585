"""The HTTP API: KServe v2 / Open Inference Protocol over REST (aiohttp).

Routes (each also under ``/v2/models/{m}/versions/{v}/...``):

- ``GET /v2/health/live`` — 200 while the process serves; ``GET /v2/health/ready`` — 200 once
  every model is loaded and warmed up on every device; 503 (naming the phase) while loading,
  warming up and draining.
- ``GET /v2`` — server metadata; ``GET /v2/models/{m}`` — model metadata;
  ``GET /v2/models/{m}/ready``; ``GET /v2/models/{m}/stats`` and ``GET /v2/models/stats`` —
  Triton-style statistics; ``GET /v2/trace?seconds=N`` — the device timeline of the last N
  seconds (default 10) as Chrome trace-event JSON (lanes.serving.timeline).
- ``POST /v2/models/{m}/infer`` — JSON tensors or the binary tensor data extension.
- ``GET /v2/openapi.json`` — the OpenAPI 3 document of all of the above (``openapi.json`` beside
  this module, read once; tests/serving/test_openapi.py keeps it and these routes in step).

Status codes (design.md §3): 400 malformed or invalid input · 404 unknown model or version ·
405 method not allowed (with ``Allow``) · 413 body over the limit · 429 queue full · 503 not
ready or draining · 504 deadline exceeded · 500 model failure. Every error body is
``{"error": "..."}``. A request's deadline is its ``timeout`` parameter (µs, KServe) or the
``lanes-timeout-ms`` header, else the model's default; it applies until the request's batch
starts on a device. A client that disconnects while its request is queued takes the request out
of the queue.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from importlib import resources
from typing import TYPE_CHECKING, Any

from aiohttp import web

from lanes.errors import BAD_INPUT, LanesError
from lanes.models.base import Model
from lanes.serving.batcher import Pending, Refusal
from lanes.serving.codec import (
    HEADER_LENGTH,
    WireError,
    check_inputs,
    check_outputs,
    decode_request,
    encode_response,
    parse_decimal,
    parse_header_length,
)
from lanes.serving.dispatcher import Served, now_ns
from lanes.serving.stats import outcome_of
from lanes.serving.timeline import parse_seconds

if TYPE_CHECKING:
    from lanes.serving.aio_server import Server

TIMEOUT_HEADER = "lanes-timeout-ms"
OFFLOAD_BYTES = 256 * 1024
"""Bodies larger than this are decoded on the CPU pool rather than the event loop."""
INLINE_BYTES = 32 * 1024
"""Outputs up to this size, of a model without its own ``postprocess``, are encoded on the
event loop (tens of µs with orjson) rather than paying two thread wake-ups on the CPU pool;
``preprocess`` is skipped the same way when the model keeps the default (the identity)."""
MAX_TIMEOUT_NS = 10**18
"""The longest deadline a request can ask for (~31 years): a longer ``timeout`` (µs) or
``lanes-timeout-ms`` (``inf`` included) is cut to it, so a deadline always fits the engine's u64
nanoseconds and asyncio's float seconds."""
OPENAPI_FILE = "openapi.json"
"""The OpenAPI document of the REST API, a file of this package."""
SERVER_KEY: web.AppKey[Server] = web.AppKey("server")
log = logging.getLogger("lanes.serve")


def error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


@web.middleware
async def errors_as_json(request: web.Request, handler: Any) -> web.StreamResponse:
    """Every refusal, including aiohttp's own (404 route, 405, 413), as ``{"error": ...}``."""
    try:
        response: web.StreamResponse = await handler(request)
        return response
    except (WireError, Refusal) as err:
        return error(err.status, err.message)
    except web.HTTPRequestEntityTooLarge as err:
        return error(413, f"request body over the limit: {err.text}")
    except web.RequestPayloadError as err:  # e.g. a body its Content-Encoding does not decode
        why = getattr(err.__cause__, "message", "") or " ".join(str(err).split())
        return error(400, f"request body cannot be read: {why}")
    except web.HTTPMethodNotAllowed as err:
        allowed = ", ".join(sorted(err.allowed_methods))
        response = error(405, f"method {request.method} not allowed on {request.path}: {allowed}")
        response.headers["Allow"] = allowed
        return response
    except web.HTTPException as err:
        if err.status < 400:
            raise
        return error(err.status, err.reason if err.status != 404 else f"no route {request.path}")
    except Exception as err:  # a bug: still a JSON 500, and the traceback in the log
        log.exception("%s %s failed", request.method, request.path)
        return error(500, f"internal error: {type(err).__name__}: {err}")


def build_app(server: Server) -> web.Application:
    app = web.Application(
        middlewares=[server.track, errors_as_json], client_max_size=server.config.max_body_bytes
    )
    app[SERVER_KEY] = server
    r = app.router
    r.add_get("/v2/health/live", live)
    r.add_get("/v2/health/ready", ready)
    r.add_get("/v2", metadata)
    r.add_get("/v2/models/stats", all_stats)
    r.add_get("/v2/trace", trace)
    openapi_document()  # read now: a package without it fails at start, not on a request
    r.add_get("/v2/openapi.json", openapi)
    for base in ("/v2/models/{model}", "/v2/models/{model}/versions/{version}"):
        r.add_get(base, model_metadata)
        r.add_get(base + "/ready", model_ready)
        r.add_get(base + "/stats", model_stats)
        r.add_post(base + "/infer", infer)
    return app


def _server(request: web.Request) -> Server:
    return request.app[SERVER_KEY]


def _served(request: web.Request) -> Served:
    server = _server(request)
    name = request.match_info["model"]
    s = server.dispatcher.models.get(name)
    if s is None:
        if any(m.name == name for m in server.models):  # configured, not loaded yet
            raise Refusal(503, f"model '{name}' not ready: {server.state}")
        known = ", ".join(server.dispatcher.models) or "none"
        raise Refusal(404, f"unknown model '{name}'; this server has: {known}")
    version = request.match_info.get("version")
    if version is not None and version != s.model.version:
        raise Refusal(404, f"model '{name}' has no version '{version}' (it has {s.model.version})")
    return s


@functools.cache
def openapi_document() -> bytes:
    """The OpenAPI document (:data:`OPENAPI_FILE`), read once."""
    return resources.files("lanes.serving").joinpath(OPENAPI_FILE).read_bytes()


async def openapi(request: web.Request) -> web.Response:
    return web.Response(body=openapi_document(), content_type="application/json")


async def live(request: web.Request) -> web.Response:
    return web.json_response({"live": True})


async def ready(request: web.Request) -> web.Response:
    server = _server(request)
    if not server.ready:
        return error(503, f"not ready: {server.state}")
    return web.json_response({"ready": True})


async def metadata(request: web.Request) -> web.Response:
    server = _server(request)
    return web.json_response(
        {
            "name": "lanes",
            "version": server.version,
            "extensions": ["binary_tensor_data", "statistics"],
            "policy": server.dispatcher.policy,
            "devices": [
                {"name": r.device.name, "simulated": r.device.simulated}
                for r in server.dispatcher.runners
            ],
        }
    )


async def model_metadata(request: web.Request) -> web.Response:
    s = _served(request)
    m = s.model
    server = _server(request)
    return web.json_response(
        {
            "name": m.name,
            "versions": [m.version],
            "platform": m.platform,
            "inputs": [t.metadata() for t in m.inputs],
            "outputs": [t.metadata() for t in m.outputs],
            "parameters": {
                "max_batch_size": m.batching.max_batch_size,
                "batch_timeout_micros": m.batching.batch_timeout_micros,
                "num_batch_threads": m.batching.num_batch_threads,
                "max_enqueued_batches": m.batching.max_enqueued_batches,
                "timeout_ms": m.timeout_ms,
                "devices": [server.dispatcher.runners[d].device.name for d in s.devices],
            },
        }
    )


async def model_ready(request: web.Request) -> web.Response:
    s = _served(request)
    if not _server(request).ready:
        return error(503, f"model '{s.model.name}' not ready: {_server(request).state}")
    return web.json_response({"name": s.model.name, "ready": True})


async def model_stats(request: web.Request) -> web.Response:
    return web.json_response({"model_stats": [_stats(_served(request))]})


async def all_stats(request: web.Request) -> web.Response:
    server = _server(request)
    return web.json_response(
        {"model_stats": [_stats(s) for s in server.dispatcher.models.values()]}
    )


def _stats(s: Served) -> dict[str, Any]:
    """A model's statistics, and the scheduler's current cost estimates per batch size as
    ``"cost_estimates": [{"batch_size", "ns"}]`` (lanes.client balances by them)."""
    out = s.stats.json()
    out["cost_estimates"] = [{"batch_size": b, "ns": ns} for b, ns in s.estimates]
    return out


def _deadline(request: web.Request, s: Served, timeout_us: Any, arrival: int) -> int | None:
    """The request's deadline (ns on the monotonic clock), or None."""
    header = request.headers.get(TIMEOUT_HEADER)
    if timeout_us is not None:
        if isinstance(timeout_us, bool) or not isinstance(timeout_us, int) or timeout_us <= 0:
            raise WireError(400, f"parameter timeout = {timeout_us!r}: must be microseconds > 0")
        return arrival + min(timeout_us * 1000, MAX_TIMEOUT_NS)
    if header is not None:
        ms = parse_decimal(header)
        if ms is None or not ms > 0:
            raise WireError(400, f"header {TIMEOUT_HEADER}: {header!r}: must be milliseconds > 0")
        return arrival + int(min(ms * 1e6, MAX_TIMEOUT_NS))
    if s.model.timeout_ms is not None:
        return arrival + int(s.model.timeout_ms * 1e6)
    return None


def _check(request_inputs: Any, s: Served) -> None:
    batching = s.model.batching.max_batch_size > 0
    try:
        check_inputs(request_inputs, s.model.inputs, batching=batching)
    except WireError:
        for form in s.model.input_forms:
            try:
                check_inputs(request_inputs, form, batching=batching)
                return
            except WireError:
                continue
        raise


async def trace(request: web.Request) -> web.Response:
    """The device timeline of the last ``seconds`` (default 10) as Chrome trace-event JSON."""
    try:
        seconds = parse_seconds(request.query.get("seconds"))
    except LanesError as err:
        raise Refusal(400, err.message) from None
    body = await _server(request).timeline.export(seconds)
    return web.Response(body=body, content_type="application/json")


async def infer(request: web.Request) -> web.Response:
    """:func:`_infer`, counting the request of a served model in exactly one outcome
    (lanes.serving.stats.OUTCOMES): by its status, or ``cancelled`` when the client went away
    (``unavailable`` when the server cut it while not ready, i.e. draining)."""
    s = _served(request)  # an unknown model is not counted
    outcome = "model_error"  # an unexpected exception: a JSON 500 from the middleware
    try:
        response = await _infer(request)
        outcome = "success"
        return response
    except (WireError, Refusal, web.HTTPException) as err:
        outcome = outcome_of(err.status)
        raise
    except asyncio.CancelledError:
        outcome = "cancelled" if _server(request).ready else "unavailable"
        raise
    finally:
        s.stats.outcome(outcome)


async def _infer(request: web.Request) -> web.Response:
    """One inference: decode → admit → pre-process → queue → device → post-process → encode."""
    arrival = now_ns()
    server = _server(request)
    s = _served(request)
    if not server.ready:
        raise Refusal(503, f"not ready: {server.state}")
    body = await request.read()
    header_length = parse_header_length(request.headers.get(HEADER_LENGTH))
    limit = server.config.max_body_bytes
    loop = asyncio.get_running_loop()
    if len(body) > OFFLOAD_BYTES:  # a big body is parsed off the event loop
        req = await loop.run_in_executor(
            server.cpu, lambda: decode_request(body, header_length, max_bytes=limit)
        )
    else:
        req = decode_request(body, header_length, max_bytes=limit)
    _check(req, s)
    check_outputs(req, s.model.outputs)
    deadline = _deadline(request, s, req.parameters.get("timeout"), arrival)
    rows = s.model.rows(req.inputs)
    dispatcher = server.dispatcher
    if (
        dispatcher.policy == "edf"
        and deadline is not None
        and dispatcher.predicted_finish(s, rows, now_ns()) > deadline
    ):
        s.stats.expired += 1
        raise Refusal(
            504, f"model '{s.model.name}': predicted to miss its deadline (edf); not queued"
        )
    try:
        s.queue.admit(rows)
    except Refusal:
        s.stats.rejected += 1
        raise
    queued = False
    try:
        t0 = now_ns()
        try:
            if type(s.model).preprocess is Model.preprocess:  # the identity: no thread hop
                item = s.model.preprocess(req.inputs)
            else:
                item = await loop.run_in_executor(server.cpu, s.model.preprocess, req.inputs)
        except LanesError as err:
            raise Refusal(400 if err.code == BAD_INPUT else 500, err.message) from None
        except Exception as err:
            raise Refusal(
                500, f"model '{s.model.name}' preprocess failed: {type(err).__name__}: {err}"
            ) from None
        s.stats.compute_input.add(now_ns() - t0)
        if deadline is not None and now_ns() >= deadline:
            s.stats.expired += 1
            raise Refusal(504, f"model '{s.model.name}': deadline exceeded before queueing")
        p = Pending(item, rows, arrival, deadline, loop.create_future())
        dispatcher.enqueue(s, p)
        queued = True
    finally:
        if not queued:
            s.queue.release(rows)
    part = await _wait(s, p, dispatcher)
    t1 = now_ns()

    def finish() -> tuple[bytes, dict[str, str]]:
        """Post-process and encode on the CPU pool (never on the event loop)."""
        try:
            outputs = s.model.postprocess(part)
        except Exception as err:
            raise Refusal(
                500, f"model '{s.model.name}' postprocess failed: {type(err).__name__}: {err}"
            ) from None
        return encode_response(
            s.model.name, s.model.version, req.id, outputs, req.outputs, req.binary_output_default
        )

    try:
        if type(s.model).postprocess is Model.postprocess and _nbytes(part) <= INLINE_BYTES:
            payload, headers = finish()  # small outputs, no post-processing: no thread hop
        else:
            payload, headers = await loop.run_in_executor(server.cpu, finish)
    except (Refusal, WireError):
        s.stats.fail.add(now_ns() - arrival)
        raise
    s.stats.compute_output.add(now_ns() - t1)
    s.stats.success.add(now_ns() - arrival)
    return web.Response(body=payload, headers=headers)


def _nbytes(part: Any) -> int:
    """The bytes of a request's outputs (a mapping of arrays); unknown shapes count as large."""
    try:
        return sum(int(getattr(v, "nbytes", OFFLOAD_BYTES + 1)) for v in part.values())
    except AttributeError:
        return OFFLOAD_BYTES + 1


async def _wait(s: Served, p: Pending, dispatcher: Any) -> Any:
    """Wait for the request's batch; enforce the deadline while it is queued; a cancelled
    handler (the client went away) takes a queued request out."""
    timeout = None if p.deadline_ns is None else max(0.0, (p.deadline_ns - now_ns()) / 1e9)
    try:
        try:
            return await asyncio.wait_for(asyncio.shield(p.future), timeout)
        except asyncio.TimeoutError:
            if dispatcher.withdraw(s, p):
                s.stats.expired += 1
                waited = (now_ns() - p.arrival_ns) / 1e6
                raise Refusal(
                    504,
                    f"model '{s.model.name}': deadline exceeded after {waited:.1f} ms "
                    "in the queue; not run",
                ) from None
            return await p.future  # already running: it completes
    except asyncio.CancelledError:
        if dispatcher.withdraw(s, p):
            s.stats.cancelled += 1
        raise
    except Refusal as err:
        if err.status == 500:
            s.stats.fail.add(now_ns() - p.arrival_ns)
        raise
