"""What every service of the pathology zoo shares: the command line, the model, the KServe v2
shapes and the aiohttp routes.

Each zoo service is ``python SERVICE.py --port N`` and answers ``GET /v2/health/ready`` (200) and
``POST /v2/models/zoo/infer`` with a small KServe v2 reply. The "model" is a tiny two-layer
network in pure Python (:func:`predict`): real CPU work on the request's own thread, about
0.3 ms a request with the default ``rounds``, so profiles show a model frame and nothing else.
Each service plants exactly one fault around it; this module plants none.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Awaitable, Callable

from aiohttp import web

MODEL = "zoo"
INFER_PATH = f"/v2/models/{MODEL}/infer"
READY_PATH = "/v2/health/ready"
INPUTS = 16
HIDDEN = 24
OUTPUTS = 4

_rng = random.Random(0)
_W1 = [[_rng.uniform(-1, 1) for _ in range(INPUTS)] for _ in range(HIDDEN)]
_W2 = [[_rng.uniform(-1, 1) for _ in range(HIDDEN)] for _ in range(OUTPUTS)]


def port_from_args(description: str | None) -> int:
    """``--port N`` from the command line (the lab fills in ``{port}``)."""
    parser = argparse.ArgumentParser(description=(description or "").split("\n")[0])
    parser.add_argument("--port", type=int, required=True)
    return int(parser.parse_args().port)


def predict(x: list[float], rounds: int = 3) -> list[float]:
    """The model: ``rounds`` passes of a 16-24-4 ReLU network, each fed the last output."""
    out = x
    for _ in range(rounds):
        hidden = [max(0.0, sum(w * v for w, v in zip(row, x, strict=True))) for row in _W1]
        out = [sum(w * h for w, h in zip(row, hidden, strict=True)) for row in _W2]
        x = [*out, *x[OUTPUTS:]]
    return out


def request_input(body: bytes) -> list[float]:
    """The first input tensor's data of a KServe v2 JSON request (zeros when absent)."""
    doc = json.loads(body or b"{}")
    inputs = doc.get("inputs") or [{}]
    data = [float(v) for v in inputs[0].get("data", [])][:INPUTS]
    return data + [0.0] * (INPUTS - len(data))


def reply(y: list[float]) -> bytes:
    """A KServe v2 infer reply carrying ``y`` as output ``y``."""
    doc = {
        "model_name": MODEL,
        "model_version": "1",
        "outputs": [{"name": "y", "shape": [1, len(y)], "datatype": "FP32", "data": y}],
    }
    return json.dumps(doc).encode()


def infer(body: bytes, rounds: int = 3) -> bytes:
    """Request body to reply body, all on the calling thread."""
    return reply(predict(request_input(body), rounds))


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def ready(_request: web.Request) -> web.Response:
    return web.Response(text="ready\n")


def app(infer_handler: Handler) -> web.Application:
    """An aiohttp application with the zoo's two routes; ``infer_handler`` answers inference."""
    application = web.Application()
    application.router.add_get(READY_PATH, ready)
    application.router.add_post(INFER_PATH, infer_handler)
    return application


def json_response(body: bytes) -> web.Response:
    return web.Response(body=body, content_type="application/json")


def serve(application: web.Application, port: int) -> None:
    """Run ``application`` on 127.0.0.1:``port`` until SIGTERM or SIGINT."""
    web.run_app(application, host="127.0.0.1", port=port, print=None, access_log=None)
