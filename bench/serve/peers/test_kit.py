"""Checks of the serving-race kit itself (not of the servers): the pass rules, the summary's
ratios, the interleaving, the profile summariser, the identity model, the peers' KServe JSON
codec, the gRPC request and the ghz/oha reports, and the MLServer runtime against ONNX
Runtime."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kserve_json
import protocols
import run

import models


def result(p99: float, errors: int = 0, unfinished: int = 0) -> dict[str, Any]:
    return {
        "latency_ms": {"p99": p99},
        "errors": {"connect": 0, "read": 0, "write": 0, "status": errors, "timeout": 0},
        "unfinished": unfinished,
    }


@pytest.mark.parametrize(
    ("p99", "errors", "unfinished", "ok"),
    [(49.9, 0, 0, True), (50.0, 0, 0, False), (10.0, 1, 0, False), (10.0, 0, 1, False)],
)
def test_pass_rule(p99: float, errors: int, unfinished: int, ok: bool) -> None:
    assert run.passes(result(p99, errors, unfinished)) is ok


def record(repeat: int, server: str, cap: float) -> dict[str, Any]:
    return {
        "repeat": repeat,
        "server": server,
        "model": "m",
        "capacity_rps": cap,
        "added_p50_us": 1.0,
        "added_p99_us": 2.0,
        "p50_ms": 1.0,
        "p99_ms": 2.0,
    }


def test_ratios_within_a_repeat_and_a_peer_below_the_lowest_rate() -> None:
    records = [
        record(0, "lanes", 100),
        record(0, "litserve", 50),
        record(0, "ray", 0),
        record(1, "lanes", 90),
        record(1, "litserve", 30),
        record(1, "ray", 10),
    ]
    ratios = run.summarise(records)["m"]["capacity_ratios"]
    assert ratios["lanes/litserve"]["per_repeat"] == [2.0, 3.0]
    assert ratios["lanes/litserve"]["median"] == 2.5
    assert ratios["lanes/ray"]["per_repeat"] == [9.0]
    assert ratios["lanes/ray"]["repeats_peer_below_lowest_rate"] == 1


def test_hot_frames_drop_waits(tmp_path: Path) -> None:
    raw = tmp_path / "raw.txt"
    raw.write_text(
        "main;loop;EpollSelector.select (selectors.py:468) 6\n"
        "main;loop;handler;dumps (json/__init__.py:238) 3\n"
        "main;loop;handler 1\n"
    )
    hot = run.hot_frames(raw)
    assert (hot["samples"], hot["waiting"]) == (10, 6)
    assert dict(hot["inclusive"])["handler"] == 1.0
    assert dict(hot["self"])["dumps (json/__init__.py:238)"] == 0.75


def test_identity_model_runs_and_echoes(tmp_path: Path) -> None:
    folder = models.write_identity(tmp_path / "identity")
    assert "max_batch_size = 16" in (folder / "model.toml").read_text()
    import onnxruntime as ort

    session = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    x = models.sample(models.MODELS["identity"], rows=3)
    np.testing.assert_array_equal(session.run(None, {"x": x})[0], x)
    bare = models.bare_latency(folder / "model.onnx", models.MODELS["identity"], 1, runs=50)
    assert 0 < bare.p50_us <= bare.p99_us


def test_kserve_json_round_trip_and_refusals() -> None:
    x = models.sample(models.MODELS["identity"])
    body = {
        "inputs": [{"name": "x", "shape": [1, 16], "datatype": "FP32", "data": x.ravel().tolist()}]
    }
    np.testing.assert_array_equal(kserve_json.decode(body, "x"), x)
    out = kserve_json.encode("identity", "y", x)
    assert out["outputs"][0]["shape"] == [1, 16]
    with pytest.raises(kserve_json.BadRequest, match="expected 'x' 'FP32'"):
        kserve_json.decode({"inputs": [{**body["inputs"][0], "datatype": "INT8"}]}, "x")
    with pytest.raises(kserve_json.BadRequest, match="15 values for shape"):
        short = {**body["inputs"][0], "data": body["inputs"][0]["data"][:15]}
        kserve_json.decode({"inputs": [short]}, "x")


def test_the_small_output_model_answers_the_arg_max_of_the_logits(tmp_path: Path) -> None:
    import onnxruntime as ort

    from lanes.models import zoo

    zoo.export(tmp_path, ["char_cnn"])
    folder = models.write_top1(tmp_path / "char_cnn", tmp_path / "char_cnn_top1")
    toml = (folder / "model.toml").read_text()
    assert 'name = "char_cnn_top1"' in toml and 'name = "x"' in toml
    assert 'name = "class"\ndatatype = "INT64"' in toml and "logits" not in toml
    x = models.sample(models.MODELS["char_cnn"], rows=4)
    full = ort.InferenceSession(str(tmp_path / "char_cnn" / "model.onnx"))
    top1 = ort.InferenceSession(str(folder / "model.onnx"))
    (logits,) = full.run(None, {"x": x})
    (cls,) = top1.run(None, {"x": x})
    assert cls.dtype == np.int64
    np.testing.assert_array_equal(cls, logits.argmax(axis=1))
    out = kserve_json.encode("char_cnn_top1", "class", cls)
    assert out["outputs"][0]["datatype"] == "INT64"


MLSERVER_CHECK = """
import asyncio, io, json, sys
import numpy as np
from mlserver.settings import ModelParameters, ModelSettings
from mlserver.types import InferenceRequest, RequestInput
from mlserver_app import OnnxRuntime

uri, name, input_name, shape = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
x = np.load(io.BytesIO(sys.stdin.buffer.read()))
settings = ModelSettings(
    name=name,
    implementation=OnnxRuntime,
    parameters=ModelParameters(uri=uri, extra={"threads": 1}),
)
model = OnnxRuntime(settings)
asyncio.run(model.load())
request = InferenceRequest(
    inputs=[RequestInput(name=input_name, shape=shape, datatype="FP32", data=x.ravel().tolist())]
)
out = asyncio.run(model.predict(request)).outputs[0]
print(json.dumps({"name": out.name, "shape": out.shape, "datatype": out.datatype,
                  "data": list(out.data.root)}))
"""


@pytest.mark.parametrize("name", ["identity", "char_cnn_top1", "char_cnn"])
def test_the_mlserver_runtime_answers_what_onnxruntime_computes(name: str, tmp_path: Path) -> None:
    """The race's MLServer runtime (``mlserver_app.OnnxRuntime``, run in MLServer's own venv)
    on a batch of 3 rows answers the output name, shape, datatype and values of ONNX Runtime
    run in process on the same graph."""
    import io
    import json
    import subprocess

    import onnxruntime as ort

    if not run.MLSERVER_PY.exists():
        pytest.skip(f"MLServer's venv is absent: {run.MLSERVER_PY} (run.py setup)")
    repo = run.repository(tmp_path, name)
    graph = repo / name / "model.onnx"
    info = models.MODELS[name]
    x = models.sample(info, rows=3)
    buffer = io.BytesIO()
    np.save(buffer, x)
    args = [str(graph), name, info.input_name, json.dumps(list(x.shape))]
    done = subprocess.run(
        [str(run.MLSERVER_PY), "-c", MLSERVER_CHECK, *args],
        input=buffer.getvalue(),
        capture_output=True,
        cwd=run.HERE,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    answer = json.loads(done.stdout.decode().strip().splitlines()[-1])
    (expected,) = ort.InferenceSession(str(graph)).run(None, {info.input_name: x})
    assert answer["name"] == info.output_name
    assert answer["shape"] == list(expected.shape)
    assert answer["datatype"] == kserve_json.DATATYPES[str(expected.dtype)]
    got = np.asarray(answer["data"], dtype=expected.dtype).reshape(expected.shape)
    np.testing.assert_array_equal(got, expected)


def test_grpc_request_carries_the_input_bytes() -> None:
    import base64

    x = models.sample(models.MODELS["identity"])
    request = protocols.grpc_request("identity", "x", x)
    assert request["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [1, 16]}]
    raw = base64.b64decode(request["raw_input_contents"][0])
    np.testing.assert_array_equal(np.frombuffer(raw, "<f4").reshape(1, 16), x)


def test_reports_of_ghz_and_oha_read_into_one_shape() -> None:
    ghz = {
        "count": 600,
        "rps": 99.5,
        "latencyDistribution": [
            {"percentage": 50, "latency": 1_500_000},
            {"percentage": 90, "latency": 2_000_000},
            {"percentage": 99, "latency": 4_000_000},
        ],
        "statusCodeDistribution": {"OK": 598, "Unavailable": 2},
    }
    got = protocols.read_ghz(ghz)
    assert got["latency_ms"] == {"p50": 1.5, "p90": 2.0, "p99": 4.0}
    assert (got["rps"], got["requests"], got["errors"]) == (99.5, 600, {"status": 2})
    oha = {
        "summary": {"requestsPerSec": 100.2},
        "latencyPercentiles": {"p50": 0.001, "p90": 0.002, "p99": 0.003},
        "statusCodeDistribution": {"200": 601},
        "errorDistribution": {"aborted due to deadline": 2, "connection closed": 1},
    }
    got = protocols.read_oha(oha)
    assert got["latency_ms"] == {"p50": 1.0, "p90": 2.0, "p99": 3.0}
    assert (got["requests"], got["errors"]) == (601, {"status": 0, "other": 1})
    assert got["unsent_at_deadline"] == 2


@pytest.mark.parametrize(
    ("p99", "rps", "errors", "ok"),
    [(49.9, 90.0, 0, True), (50.0, 100.0, 0, False), (10.0, 89.9, 0, False), (1.0, 100, 1, False)],
)
def test_fixed_rate_pass_rule(p99: float, rps: float, errors: int, ok: bool) -> None:
    result = {"latency_ms": {"p99": p99}, "rps": rps, "errors": {"status": errors}}
    assert protocols.passes(result, 100.0, 50.0) is ok


def test_interleaving_rotates_the_servers_per_repeat() -> None:
    order = list(run.interleaved(2, ("m",), ("a", "b", "c")))
    assert order == [
        (0, "m", "a"),
        (0, "m", "b"),
        (0, "m", "c"),
        (1, "m", "b"),
        (1, "m", "c"),
        (1, "m", "a"),
    ]
