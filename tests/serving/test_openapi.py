"""The OpenAPI document of ``lanes serve`` (``GET /v2/openapi.json``), checked three ways:

- it is valid OpenAPI 3 (schemathesis validates it against the specification's own schema);
- the server serves it, byte for byte, and schemathesis fuzzes every operation of it against
  a live server on loopback (``affine``, an ONNX model from a repository in a temporary folder,
  and ``echo``, a BYTES model): the document's examples, boundary cases, and a bounded number
  (:data:`MAX_EXAMPLES`) of generated cases per operation, valid and invalid, half of them naming
  a served model and its version: every answer's status must be documented for its operation,
  its content type and body must conform, and no 5xx may appear but 504 (a deadline the fuzzer
  set). These models never fail, so a 500 is a server bug.

schemathesis is in the ``dev`` extra that ``make setup`` installs: without it this module fails
to import (an error, never a skip).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import schemathesis
from onnx_repository import write_onnx_repository

from lanes.models import Batching, Model, TensorSpec
from lanes.models.repository import load_repository
from lanes.serving import Handle, ServeConfig, start_in_thread
from lanes.serving.openapi import openapi_document

MAX_EXAMPLES = int(os.environ.get("LANES_OPENAPI_EXAMPLES", "25"))
"""Generated cases per operation (the fuzz test takes about 15 s); set
``LANES_OPENAPI_EXAMPLES`` for a longer hunt."""
EXPECTED_STATUSES = ["2xx", "3xx", "4xx", "504"]
"""What the fuzzer may see: no 5xx but a deadline it set (the models here never fail, the
server is ready throughout)."""


class Echo(Model):
    """``n = s`` (BYTES [N]): the BYTES paths of the codec, both ways."""

    def predict(self, batch: Any) -> dict[str, np.ndarray]:
        return {"n": batch["s"]}


def echo() -> Echo:
    return Echo(
        name="echo",
        inputs=[TensorSpec("s", "BYTES", (-1,))],
        outputs=[TensorSpec("n", "BYTES", (-1,))],
        batching=Batching(4),
    )


def document() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(openapi_document())
    return loaded


# -- the document -----------------------------------------------------------------------------


def test_the_document_is_valid_openapi() -> None:
    schema = schemathesis.openapi.from_dict(document())
    schema.validate()  # raises on a document the OpenAPI 3.0 schema refuses
    assert document()["openapi"].startswith("3.0.")


def test_every_operation_documents_its_error_bodies() -> None:
    """Every 4xx/5xx response an operation documents is the JSON ``{"error": ...}`` body."""
    doc = document()
    responses = doc["components"]["responses"]
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            for status, response in operation["responses"].items():
                if int(status) < 400:
                    continue
                if "$ref" in response:
                    response = responses[response["$ref"].rsplit("/", 1)[1]]
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/Error"}, (method, path, status)


# -- the live server --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Handle]:
    root = tmp_path_factory.mktemp("repo")
    write_onnx_repository(root)
    config = ServeConfig(
        port=0, metrics_port=None, devices="cpu", max_body_mb=1 / 16, warmup_batches=0
    )
    with start_in_thread(config, [*load_repository(root), echo()]) as handle:
        yield handle


def test_the_server_serves_the_document(live: Handle) -> None:
    with urllib.request.urlopen(f"{live.url}/v2/openapi.json", timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("application/json")
        assert response.read() == openapi_document()


def test_the_native_server_routes_every_documented_operation(live: Handle) -> None:
    """Every documented operation reaches a handler of ``lanes serve`` (no ``no route`` 404, no
    405), and an undocumented path is the ``no route`` 404."""
    for path, item in document()["paths"].items():
        url = live.url + path.replace("{model}", "affine").replace("{version}", "1")
        for method in item:
            if method == "parameters":
                continue
            data = b'{"inputs": []}' if method == "post" else None
            request = urllib.request.Request(url, data=data, method=method.upper())
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    status, body = response.status, response.read()
            except urllib.error.HTTPError as err:
                status, body = err.code, err.read()
            assert status != 405, (method, path, body)
            assert not (status == 404 and b"no route" in body), (method, path, body)
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(f"{live.url}/v2/models/affine/explain", timeout=10)
    assert raised.value.code == 404
    assert json.loads(raised.value.read())["error"] == "no route /v2/models/affine/explain"


def test_a_wrong_method_is_405_with_allow(live: Handle) -> None:
    request = urllib.request.Request(f"{live.url}/v2/health/live", method="POST")
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=10)
    assert raised.value.code == 405
    assert raised.value.headers["Allow"] == "GET, HEAD"
    assert "POST" in json.loads(raised.value.read())["error"]


FUZZ_CONFIG = {
    "generation": {
        "max-examples": MAX_EXAMPLES,
        "deterministic": os.environ.get("LANES_OPENAPI_RANDOM") != "1",
        "database": "none",
    },
    "phases": {"stateful": {"enabled": False}},
    "checks": {
        "not_a_server_error": {"expected-statuses": EXPECTED_STATUSES},
        # A request the schema allows can still name inputs the model lacks: a 400.
        "positive_data_acceptance": {"enabled": False},
    },
    "dictionaries": {
        "models": {"values": ["affine", "echo"]},
        "versions": {"values": ["1"]},
        "inputs": {"values": ["x", "s"]},
        "outputs": {"values": ["y", "k", "n"]},
        "dims": {"values": [0, 1, 2, 4]},
    },
    "parameters": {
        "path.model": {"dictionary": "models", "probability": 0.5},
        "path.version": {"dictionary": "versions", "probability": 0.5},
    },
    "operations": [
        # Inference for a served model, with its tensor names and small shapes most of the time:
        # the requests reach the codec's checks and the models rather than stopping at a 404.
        {
            "include-path": path,
            "parameters": {
                "path.model": model,
                "path.version": "1",
                "body.inputs[*].name": {"dictionary": "inputs", "probability": 0.8},
                "body.inputs[*].shape[*]": {"dictionary": "dims", "probability": 0.8},
                "body.outputs[*].name": {"dictionary": "outputs", "probability": 0.8},
            },
        }
        for path, model in [
            ("/v2/models/{model}/infer", "affine"),
            ("/v2/models/{model}/versions/{version}/infer", "echo"),
        ]
    ],
    "request-timeout": 10,
}
"""The fuzzer's settings (schemathesis.toml's keys)."""

# The package's document, which test_the_server_serves_the_document proves is what the server
# serves. (Loaded at import, not from the live server through schemathesis.pytest.from_fixture:
# that lazy loader sets ``Node._nodeid``, which pytest 9.2 no longer has.)
fuzzed = schemathesis.openapi.from_dict(
    document(), config=schemathesis.Config.from_dict(FUZZ_CONFIG)
)


@fuzzed.parametrize()
def test_fuzzed_requests_get_documented_answers(case: schemathesis.Case, live: Handle) -> None:
    case.call_and_validate(base_url=live.url)
