"""The model repository: model.toml parsing, its refusals, and the ONNX graph checks."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from lanes.errors import REPOSITORY_INVALID, LanesError
from lanes.models import Batching, Cost, Device
from lanes.models.adapters.onnx import OnnxModel
from lanes.models.adapters.python import PythonModel
from lanes.models.base import MODEL_INVALID
from lanes.models.repository import adapter_names, load_model, load_repository

W = np.arange(6, dtype=np.float32).reshape(3, 2) / 10
B = np.array([0.5, -1.0], dtype=np.float32)


def write_linear_onnx(path: Path, batch: int | str = "N") -> None:
    """``y = x @ W + b``: input x FP32 [batch, 3], output y FP32 [batch, 2]."""
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W"], ["xw"]),
            helper.make_node("Add", ["xw", "b"], ["y"]),
        ],
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 2])],
        [numpy_helper.from_array(W, "W"), numpy_helper.from_array(B, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


LINEAR_TOML = """\
adapter = "onnx"
file = "model.onnx"
{extra}
[[inputs]]
name = "x"
datatype = "FP32"
shape = [{batch}, 3]

[[outputs]]
name = "y"
datatype = "FP32"
shape = [{batch}, 2]
"""

ECHO_PY = """\
import numpy as np

def predict(batch):
    return {"out": batch["text"][::-1].copy()}
"""

ECHO_TOML = """\
adapter = "python"
file = "model.py"

[[inputs]]
name = "text"
datatype = "BYTES"
shape = [-1]

[[outputs]]
name = "out"
datatype = "BYTES"
shape = [-1]
"""


def add_onnx(
    root: Path,
    folder: str = "linear",
    *,
    extra: str = "",
    batch: str = "-1",
    graph_batch: int | str = "N",
) -> Path:
    d = root / folder
    d.mkdir(parents=True, exist_ok=True)
    write_linear_onnx(d / "model.onnx", graph_batch)
    (d / "model.toml").write_text(LINEAR_TOML.format(extra=extra, batch=batch))
    return d


def add_echo(root: Path, folder: str = "echo", toml: str = ECHO_TOML) -> Path:
    d = root / folder
    d.mkdir(parents=True, exist_ok=True)
    (d / "model.py").write_text(ECHO_PY)
    (d / "model.toml").write_text(toml)
    return d


def refusal(root: Path) -> LanesError:
    with pytest.raises(LanesError) as info:
        load_repository(root)
    return info.value


# -- reading a repository ------------------------------------------------------------------------


def test_loads_onnx_and_python_models_sorted_by_name(tmp_path: Path) -> None:
    extra = textwrap.dedent(
        """\
        name = "lin"
        version = "3"
        devices = ["cpu", "sim"]
        timeout_ms = 250
        [batching]
        max_batch_size = 16
        batch_timeout_micros = 100
        num_batch_threads = 2
        max_enqueued_batches = 8
        [cost]
        fixed_ms = 0.5
        per_item_ms = 0.3
        """
    )
    add_onnx(tmp_path, "zz_linear", extra=extra)
    add_echo(tmp_path)
    (tmp_path / "notes").mkdir()  # no model.toml: skipped
    (tmp_path / "README.md").write_text("not a model")

    models = load_repository(tmp_path)

    assert [m.name for m in models] == ["echo", "lin"]
    echo, lin = models
    assert isinstance(lin, OnnxModel) and isinstance(echo, PythonModel)
    assert lin.version == "3" and lin.platform == "onnxruntime_onnx"
    assert tuple(lin.devices) == ("cpu", "sim")
    assert lin.timeout_ms == 250
    assert lin.batching == Batching(16, 100, 2, 8)
    assert lin.cost == Cost(0.5, 0.3)
    assert [s.metadata() for s in lin.inputs] == [
        {"name": "x", "datatype": "FP32", "shape": [-1, 3]}
    ]
    assert lin.file == tmp_path / "zz_linear" / "model.onnx"

    x = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    direct = ort.InferenceSession(str(lin.file), providers=["CPUExecutionProvider"])
    expected = direct.run(["y"], {"x": x})[0]
    replica = lin.replica(Device("cpu", 0, threads=1))
    out = replica.predict({"x": x})
    assert list(out) == ["y"]
    np.testing.assert_array_equal(out["y"], expected)
    np.testing.assert_allclose(out["y"], x @ W + B, rtol=1e-6)

    text = np.array([b"a", b"b", b"c"], dtype=object)
    echo_replica = echo.replica(Device("cpu"))
    assert echo_replica.predict({"text": text})["out"].tolist() == [b"c", b"b", b"a"]


def test_defaults(tmp_path: Path) -> None:
    add_onnx(tmp_path, batch="1", graph_batch=1)
    [model] = load_repository(str(tmp_path))
    assert model.name == "linear"
    assert model.version == "1"
    assert tuple(model.devices) == ("cpu", "cuda", "sim")
    assert model.timeout_ms is None
    assert model.batching == Batching()
    assert model.cost == Cost()


def test_load_model_reads_one_folder(tmp_path: Path) -> None:
    model = load_model(add_echo(tmp_path))
    assert model.name == "echo" and model.platform == "python"


def test_adapter_names() -> None:
    assert adapter_names() == ("onnx", "torch", "python")


def test_import_pulls_in_no_runtime() -> None:
    code = (
        "import sys, lanes.models.repository, lanes.models.adapters; "
        "print(sorted(m for m in ('onnx', 'onnxruntime', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- the repository itself -----------------------------------------------------------------------


def test_missing_repository(tmp_path: Path) -> None:
    err = refusal(tmp_path / "nope")
    assert err.code == REPOSITORY_INVALID
    assert err.message == f"model repository {tmp_path / 'nope'}: no such folder"


def test_repository_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    assert "not a folder" in refusal(tmp_path / "f").message


def test_empty_repository(tmp_path: Path) -> None:
    (tmp_path / "no_toml").mkdir()
    err = refusal(tmp_path)
    assert err.code == REPOSITORY_INVALID
    assert err.message.startswith(f"model repository {tmp_path}: no models:")
    assert "model.toml" in err.message


def test_duplicate_names(tmp_path: Path) -> None:
    add_echo(tmp_path, "a", 'name = "echo"\n' + ECHO_TOML)
    add_echo(tmp_path, "b", 'name = "echo"\n' + ECHO_TOML)
    err = refusal(tmp_path)
    assert err.code == REPOSITORY_INVALID
    assert err.message == (
        f'model repository {tmp_path}: name = "echo" is used by {tmp_path / "a" / "model.toml"} '
        f"and {tmp_path / 'b' / 'model.toml'}: model names must be unique"
    )


# -- model.toml refusals ---------------------------------------------------------------------------


def test_invalid_toml_names_file_and_line(tmp_path: Path) -> None:
    d = add_echo(tmp_path)
    (d / "model.toml").write_text('adapter = "python"\nfile = \n')
    err = refusal(tmp_path)
    assert err.code == REPOSITORY_INVALID
    assert err.message.startswith(f"{d / 'model.toml'}: invalid TOML: ")
    assert "line 2" in err.message
    assert "\n" not in err.message


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (
            'colour = "red"\n' + ECHO_TOML,
            'colour = "red": unknown key; allowed keys here: name, adapter, file, version, '
            "devices, timeout_ms, batching, cost, inputs, outputs, weights",
        ),
        (
            ECHO_TOML + "[batching]\nmax_batch = 4\n",
            "batching.max_batch = 4: unknown key; allowed keys here: max_batch_size, "
            "batch_timeout_micros, num_batch_threads, max_enqueued_batches",
        ),
        (
            ECHO_TOML.replace("shape = [-1]\n\n[[outputs]]", "shape = [-1]\nsize = 3\n[[outputs]]"),
            "inputs[0].size = 3: unknown key; allowed keys here: name, datatype, shape",
        ),
        (
            ECHO_TOML + '[batching]\nmax_batch_size = "16"\n',
            'batching.max_batch_size = "16": must be an integer >= 0',
        ),
        (
            ECHO_TOML + "[batching]\nnum_batch_threads = 0\n",
            "batching.num_batch_threads = 0: must be an integer >= 1",
        ),
        (
            ECHO_TOML + "[batching]\nmax_batch_size = true\n",
            "batching.max_batch_size = true: must be an integer >= 0",
        ),
        (
            "version = 2\n" + ECHO_TOML,
            "version = 2: must be a string",
        ),
        (
            "timeout_ms = 0\n" + ECHO_TOML,
            "timeout_ms = 0: must be a number > 0",
        ),
        (
            'devices = ["gpu"]\n' + ECHO_TOML,
            'devices = ["gpu"]: must be a non-empty array of distinct device kinds from '
            '"cpu", "cuda", "sim"',
        ),
        (
            'name = "a b"\n' + ECHO_TOML,
            "name = \"a b\": must be 1 to 64 letters, digits, '_', '.' or '-', starting with a "
            "letter or digit",
        ),
        (
            ECHO_TOML.replace('datatype = "BYTES"', 'datatype = "STRING"', 1),
            'inputs[0].datatype = "STRING": must be one of "BOOL", "UINT8", "UINT16", "UINT32", '
            '"UINT64", "INT8", "INT16", "INT32", "INT64", "FP16", "FP32", "FP64", "BYTES"',
        ),
        (
            ECHO_TOML.replace("shape = [-1]", "shape = [0]", 1),
            "inputs[0].shape = [0]: must be an array of integers, each >= 1 or -1 (any size), "
            "e.g. [-1, 3]",
        ),
        (
            ECHO_TOML.replace("shape = [-1]", 'shape = "-1"', 1),
            'inputs[0].shape = "-1": must be an array of integers',
        ),
        (
            ECHO_TOML + "[cost]\nfixed_ms = -1\n",
            "cost.fixed_ms = -1: must be a number >= 0",
        ),
        (
            "cost = 3\n" + ECHO_TOML,
            "cost = 3: must be a table: [cost]",
        ),
        (
            ECHO_TOML.split("[[outputs]]")[0],
            "outputs is missing: must be one or more [[outputs]] tables",
        ),
        (
            ECHO_TOML.replace('adapter = "python"', 'adapter = "tensorflow"'),
            'adapter = "tensorflow": must be one of "onnx", "torch", "python"',
        ),
        (
            ECHO_TOML.replace('adapter = "python"\n', ""),
            'adapter is missing: must be one of "onnx", "torch", "python"',
        ),
        (
            ECHO_TOML.replace('file = "model.py"', 'file = "missing.py"'),
            'file = "missing.py": no such file in ',
        ),
        (
            'weights = "model.py"\n' + ECHO_TOML,
            'weights = "model.py": only for the torch adapter, not python',
        ),
    ],
)
def test_model_toml_refusals(tmp_path: Path, toml: str, message: str) -> None:
    d = add_echo(tmp_path, toml=toml)
    err = refusal(tmp_path)
    assert err.code == REPOSITORY_INVALID
    assert err.message.startswith(f"{d / 'model.toml'}: {message}"), err.message
    assert "\n" not in err.message


def test_cost_both_zero_is_refused_with_the_path(tmp_path: Path) -> None:
    d = add_echo(tmp_path, toml=ECHO_TOML + "[cost]\nfixed_ms = 0\n")
    err = refusal(tmp_path)
    assert err.code == MODEL_INVALID
    assert err.message.startswith(f"{d / 'model.toml'}: cost fixed_ms = 0.0, per_item_ms = 0.0")


def test_batching_without_batch_dimension(tmp_path: Path) -> None:
    d = add_onnx(tmp_path, extra="[batching]\nmax_batch_size = 8\n", batch="4", graph_batch="N")
    err = refusal(tmp_path)
    assert err.code == MODEL_INVALID
    assert err.message.startswith(f"{d / 'model.toml'}: model 'linear': input 'x'")
    assert "no batch dimension" in err.message
    assert "max_batch_size = 8" in err.message


# -- the ONNX graph checks -----------------------------------------------------------------------


def test_onnx_fixed_first_dimension_cannot_batch(tmp_path: Path) -> None:
    d = add_onnx(tmp_path, extra="[batching]\nmax_batch_size = 16\n", graph_batch=1)
    err = refusal(tmp_path)
    assert err.code == MODEL_INVALID
    assert err.message == (
        f"{d / 'model.toml'}: model 'linear': input 'x' has a fixed first dimension 1 in "
        "model.onnx, so it cannot batch (max_batch_size = 16): export it with a dynamic batch "
        "dimension or set max_batch_size = 0"
    )


def test_onnx_fixed_first_dimension_serves_without_batching(tmp_path: Path) -> None:
    add_onnx(tmp_path, batch="-1", graph_batch=1)
    [model] = load_repository(tmp_path)
    out = model.replica(Device("sim")).predict({"x": np.ones((1, 3), np.float32)})
    np.testing.assert_allclose(out["y"], np.ones((1, 3), np.float32) @ W + B, rtol=1e-6)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('name = "x"', 'name = "z"', "input 'z' is not an input of model.onnx; its inputs are 'x'"),
        ('name = "y"', 'name = "w"', "output 'w' is not an output of model.onnx"),
        (
            'datatype = "FP32"',
            'datatype = "FP64"',
            "input 'x' is declared FP64 but is FP32 (FLOAT) in model.onnx",
        ),
        (
            "shape = [-1, 3]",
            "shape = [-1, 3, 1]",
            "input 'x' is declared with shape [-1, 3, 1] (rank 3) but has shape [N, 3] (rank 2) "
            "in model.onnx",
        ),
        (
            "shape = [-1, 2]",
            "shape = [-1, 5]",
            "output 'y' is declared with shape [-1, 5] but dimension 1 is 2 in model.onnx "
            "(shape [N, 2])",
        ),
    ],
)
def test_onnx_declaration_must_match_the_graph(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    d = add_onnx(tmp_path)
    toml = d / "model.toml"
    toml.write_text(toml.read_text().replace(old, new, 1))
    err = refusal(tmp_path)
    assert err.code == MODEL_INVALID
    assert err.message.startswith(f"{toml}: model 'linear': {message}"), err.message


def test_onnx_undeclared_graph_input(tmp_path: Path) -> None:
    d = tmp_path / "two"
    d.mkdir()
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"])],
        "two",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 2]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, ["N", 2]),
        ],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, ["N", 2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(d / "model.onnx"))
    (d / "model.toml").write_text(
        'adapter = "onnx"\nfile = "model.onnx"\n'
        '[[inputs]]\nname = "a"\ndatatype = "FP32"\nshape = [-1, 2]\n'
        '[[outputs]]\nname = "c"\ndatatype = "FP32"\nshape = [-1, 2]\n'
    )
    err = refusal(tmp_path)
    assert err.code == MODEL_INVALID
    assert err.message == (
        f"{d / 'model.toml'}: model 'two': model.onnx needs input 'b' (FLOAT, shape [N, 2]), "
        "which is not declared: add an [[inputs]] table for it"
    )


def test_onnx_file_that_is_not_onnx(tmp_path: Path) -> None:
    d = add_onnx(tmp_path)
    (d / "model.onnx").write_bytes(b"not a protobuf at all \xff\xff")
    err = refusal(tmp_path)
    assert err.code == MODEL_INVALID
    assert "cannot read" in err.message and "as an ONNX model" in err.message


def test_a_name_no_route_reaches_is_refused(tmp_path: Path) -> None:
    name = "stats"
    # GET /v2/models/stats is every model's statistics: a model of that name has no metadata route
    d = add_echo(tmp_path, "m", f'name = "{name}"\n' + ECHO_TOML)
    err = refusal(tmp_path)
    assert err.code == MODEL_INVALID
    assert err.message.startswith(f"{d / 'model.toml'}: model name '{name}': reserved: ")
