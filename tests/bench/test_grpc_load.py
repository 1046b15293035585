"""``lanes bench grpc://``: KServe v2 gRPC load against a real ``lanes serve`` on loopback — a
REST body and a ``lanes bench corpus`` corpus sent as ``ModelInferRequest``s, the answers
checked by their gRPC status, a refused call counted by its code, and wrong options named."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lanes.bench import engine
from lanes.bench.corpus import kserve_requests, write_corpus
from lanes.cli import main
from lanes.errors import LanesError
from lanes.models.base import Batching, Model, TensorSpec
from lanes.serving import Handle, ServeConfig, start_in_thread

X = [TensorSpec("x", "FP32", (-1, 2))]
Y = [TensorSpec("y", "FP32", (-1, 2))]


class Double(Model):
    """``y = 2x``, counting the rows it has seen."""

    seen_rows = 0

    def predict(self, batch: Any) -> dict[str, np.ndarray]:
        x = np.asarray(batch["x"])
        Double.seen_rows += len(x)
        return {"y": x * 2}


@pytest.fixture
def served() -> Iterator[Handle]:
    model = Double(name="double", inputs=X, outputs=Y, batching=Batching(max_batch_size=8))
    config = ServeConfig(port=0, metrics_port=None, grpc_port="0", warmup_batches=0)
    with start_in_thread(config, [model]) as h:
        yield h


def grpc_url(h: Handle) -> str:
    assert h.server.grpc_port is not None
    return f"grpc://127.0.0.1:{h.server.grpc_port}"


BODY = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1.0, 2.0]}]}


def test_a_rest_body_is_sent_as_model_infer_calls(served: Handle, tmp_path: Path) -> None:
    body = tmp_path / "req.json"
    body.write_text(json.dumps(BODY))
    before = Double.seen_rows
    r = engine.run(
        grpc_url(served), body_file=body, kserve_model="double", requests=300, connections=8
    )
    d = r.data
    assert (d["requests"], d["errors"]["status"]) == (300, 0)
    assert d["grpc_codes"] == {"OK": 300}
    assert d["status_codes"] == {"200": 300}
    assert Double.seen_rows - before == 300  # every call reached the model as one row


def test_refusals_are_counted_by_grpc_code(served: Handle, tmp_path: Path) -> None:
    body = tmp_path / "req.json"
    body.write_text(json.dumps(BODY))
    r = engine.run(grpc_url(served), body_file=body, kserve_model="nope", requests=20)
    assert r.data["grpc_codes"] == {"NOT_FOUND": 20}
    assert r.data["errors"]["status"] == 20
    # A REST body the server would refuse (a wrong datatype) reaches it and is refused there.
    bad = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "INT32", "data": [1, 2]}]}
    body.write_text(json.dumps(bad))
    r = engine.run(grpc_url(served), body_file=body, kserve_model="double", requests=5)
    assert r.data["grpc_codes"] == {"INVALID_ARGUMENT": 5}


def test_a_corpus_of_binary_requests_drives_grpc(served: Handle, tmp_path: Path) -> None:
    arrays = tmp_path / "arrays"
    arrays.mkdir()
    for i in range(3):
        np.save(arrays / f"{i}.npy", np.full((2,), i, dtype=np.float32))
    corpus = tmp_path / "corpus.jsonl"
    write_corpus(kserve_requests("double", arrays, input_name="x"), corpus)
    out = tmp_path / "r.json"
    argv = [
        "bench", grpc_url(served), "--corpus", str(corpus), "-n", "90", "-c", "4",
        "--grpc-connections", "2", "--json", str(out), "-q",
    ]  # fmt: skip
    assert main(argv) == 0
    d = json.loads(out.read_text())
    assert d["grpc_codes"] == {"OK": 90}
    assert d["url"] == grpc_url(served)


def test_wrong_grpc_options_are_named(served: Handle, tmp_path: Path) -> None:
    with pytest.raises(LanesError, match="need a grpc:// target"):
        engine.run(f"{served.url}/", kserve_model="double", requests=1)
    with pytest.raises(LanesError, match=r"expected /package\.Service/Method"):
        engine.run(f"{grpc_url(served)}/v2/models/double/infer", requests=1)
    body = tmp_path / "req.json"
    body.write_text('{"inputs": 3}')
    with pytest.raises(LanesError, match=r"request 1 \(model \"double\"\) cannot be sent"):
        engine.run(grpc_url(served), body_file=body, kserve_model="double", requests=1)
