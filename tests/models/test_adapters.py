"""The adapters: onnx sessions and their threads, python files, and torch (real when installed,
else its missing-dependency error and a stand-in module that exercises the adapter's plumbing)."""

from __future__ import annotations

import contextlib
import re
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from lanes.errors import DEVICE_UNAVAILABLE, MISSING_DEPENDENCY, LanesError
from lanes.models import Batching, Device, TensorSpec
from lanes.models.adapters import adapter_class, adapter_names
from lanes.models.adapters.onnx import OnnxModel
from lanes.models.adapters.python import PythonModel
from lanes.models.adapters.torch import TorchModel
from lanes.models.base import MODEL_INVALID
from lanes.models.repository import load_repository

X = [TensorSpec("x", "FP32", (-1, 2))]
Y = [TensorSpec("y", "FP32", (-1, 2))]


@pytest.fixture
def double_onnx(tmp_path: Path) -> Path:
    """``y = x + x``, x and y FP32 [N, 2]."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "x"], ["y"])],
        "double",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "double.onnx"
    onnx.save(model, str(path))
    return path


def onnx_model(path: Path) -> OnnxModel:
    return OnnxModel(name="double", inputs=X, outputs=Y, batching=Batching(8), file=path)


def test_adapter_registry() -> None:
    assert adapter_names() == ("onnx", "torch", "python")
    assert adapter_class("onnx") is OnnxModel
    assert adapter_class("python") is PythonModel
    with pytest.raises(LanesError, match="allowed are onnx, torch, python"):
        adapter_class("tf")


# -- onnx ----------------------------------------------------------------------------------------


def test_onnx_session_options_follow_the_device(double_onnx: Path) -> None:
    model = onnx_model(double_onnx)
    cpu = model.replica(Device("cpu", 0, threads=2))
    assert isinstance(cpu, OnnxModel)
    options = cpu.session.get_session_options()
    assert options.intra_op_num_threads == 2
    assert options.inter_op_num_threads == 1
    assert options.execution_mode == ort.ExecutionMode.ORT_SEQUENTIAL
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert cpu.session.get_providers() == ["CPUExecutionProvider"]

    sim = model.replica(Device("sim", 3, threads=4))
    assert isinstance(sim, OnnxModel)
    assert sim.session.get_session_options().intra_op_num_threads == 1
    assert model.session is None  # replicas are copies; the model itself stays unloaded

    x = np.array([[1, 2], [3, 4], [5, 6]], dtype=np.float32)
    np.testing.assert_array_equal(cpu.predict({"x": x})["y"], 2 * x)
    np.testing.assert_array_equal(sim.predict({"x": x})["y"], 2 * x)


def test_onnx_predict_before_load(double_onnx: Path) -> None:
    with pytest.raises(RuntimeError, match="not loaded"):
        onnx_model(double_onnx).predict({"x": np.zeros((1, 2), np.float32)})


def test_onnx_cuda_without_the_cuda_provider(double_onnx: Path) -> None:
    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("this onnxruntime has the CUDA provider")
    with pytest.raises(LanesError) as info:
        onnx_model(double_onnx).load(Device("cuda", 1))
    assert info.value.code == DEVICE_UNAVAILABLE
    assert info.value.message.startswith(
        "model 'double' on cuda:1: onnxruntime has no CUDAExecutionProvider (available: "
    )
    assert "CPUExecutionProvider" in info.value.message


def test_onnx_missing_file(tmp_path: Path) -> None:
    with pytest.raises(LanesError) as info:
        onnx_model(tmp_path / "none.onnx")
    assert info.value.code == MODEL_INVALID
    assert info.value.message == f"model 'double': file {tmp_path / 'none.onnx'}: no such file"


# -- python --------------------------------------------------------------------------------------

ROUND_TRIP_PY = """\
import numpy as np

def load(device):
    scale = 10.0 if device.kind == "sim" else 1.0
    def predict(batch):
        return {"y": batch["x"] * scale}
    return predict

def preprocess(inputs):
    return {"x": inputs["x"] + 1}

def postprocess(output):
    return {"y": output["y"].astype(np.float64)}
"""


def python_model(tmp_path: Path, source: str, name: str = "model.py") -> PythonModel:
    path = tmp_path / name
    path.write_text(source)
    return PythonModel(name="py", inputs=X, outputs=Y, file=path)


def test_python_round_trip_with_per_device_predict(tmp_path: Path) -> None:
    model = python_model(tmp_path, ROUND_TRIP_PY)
    cpu, sim = model.replica(Device("cpu")), model.replica(Device("sim"))
    x = np.ones((2, 2), np.float32)
    item = cpu.preprocess({"x": x})
    batch = cpu.collate([item, item])
    out = cpu.predict(batch)
    parts = [cpu.postprocess(p) for p in cpu.split(out, [2, 2])]
    assert parts[0]["y"].dtype == np.float64
    np.testing.assert_array_equal(parts[1]["y"], np.full((2, 2), 2.0))
    np.testing.assert_array_equal(sim.predict(item)["y"], np.full((2, 2), 20.0))


def test_python_module_level_predict(tmp_path: Path) -> None:
    model = python_model(tmp_path, "def predict(batch):\n    return {'y': -batch['x']}\n")
    replica = model.replica(Device("cpu"))
    assert replica.predict({"x": np.ones((1, 2))})["y"].tolist() == [[-1.0, -1.0]]
    assert replica.preprocess({"x": np.ones(1)})["x"].tolist() == [1.0]  # default hooks
    with pytest.raises(RuntimeError, match="not loaded"):
        model.predict({"x": np.ones((1, 2))})


def test_python_file_that_raises_on_import(tmp_path: Path) -> None:
    modules = set(sys.modules)
    with pytest.raises(LanesError) as info:
        python_model(tmp_path, "import numpy\n\nx = 1 / 0\n")
    assert info.value.code == MODEL_INVALID
    assert info.value.message == (
        "model 'py': importing model.py failed at line 3: ZeroDivisionError: division by zero"
    )
    assert set(sys.modules) == modules  # the failed module is not left behind


def test_python_file_with_a_syntax_error(tmp_path: Path) -> None:
    with pytest.raises(LanesError) as info:
        python_model(tmp_path, "def predict(batch):\n    return {\n\nx = (\n")
    assert info.value.code == MODEL_INVALID
    assert info.value.message.startswith("model 'py': importing model.py failed at line ")
    assert "SyntaxError" in info.value.message


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("x = 1\n", "model.py defines no predict(batch) function"),
        ("predict = 3\n", "model.py defines predict = int, which is not callable"),
    ],
)
def test_python_file_without_predict(tmp_path: Path, source: str, message: str) -> None:
    with pytest.raises(LanesError) as info:
        python_model(tmp_path, source)
    assert info.value.code == MODEL_INVALID
    assert message in info.value.message


def test_python_load_returning_nothing_needs_a_predict(tmp_path: Path) -> None:
    model = python_model(tmp_path, "def load(device):\n    pass\n")
    with pytest.raises(LanesError, match=re.escape("load() in model.py returned None")):
        model.load(Device("cpu"))


def test_python_file_must_be_python(tmp_path: Path) -> None:
    with pytest.raises(LanesError, match="must be a Python file"):
        python_model(tmp_path, "def predict(b):\n    return b\n", name="model.txt")


def test_python_import_failure_through_the_repository(tmp_path: Path) -> None:
    d = tmp_path / "bad"
    d.mkdir()
    (d / "model.py").write_text("raise RuntimeError('no weights here')\n")
    (d / "model.toml").write_text(
        'adapter = "python"\nfile = "model.py"\n'
        '[[inputs]]\nname = "x"\ndatatype = "FP32"\nshape = [2]\n'
        '[[outputs]]\nname = "y"\ndatatype = "FP32"\nshape = [2]\n'
    )
    with pytest.raises(LanesError) as info:
        load_repository(tmp_path)
    assert info.value.code == MODEL_INVALID
    assert info.value.message == (
        f"{d / 'model.toml'}: model 'bad': importing model.py failed at line 1: "
        "RuntimeError: no weights here"
    )


# -- torch ---------------------------------------------------------------------------------------

TORCH_TOML = """\
adapter = "torch"
file = "model.pt"

[[inputs]]
name = "x"
datatype = "FP32"
shape = [-1, 2]

[[outputs]]
name = "y"
datatype = "FP32"
shape = [-1, 2]
"""


def test_torch_missing_dependency(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now fails, installed or not
    d = tmp_path / "net"
    d.mkdir()
    (d / "model.pt").write_bytes(b"")
    (d / "model.toml").write_text(TORCH_TOML)
    with pytest.raises(LanesError) as info:
        load_repository(tmp_path)
    assert info.value.code == MISSING_DEPENDENCY
    assert info.value.message == (
        f"{d / 'model.toml'}: model 'net' uses the torch adapter: pip install 'lanes[torch]'"
    )


class _FakeTensor:
    def __init__(self, array: Any) -> None:
        self.array = array
        self.device = "cpu"

    def to(self, device: Any) -> _FakeTensor:
        self.device = device
        return self

    def detach(self) -> _FakeTensor:
        return self

    def cpu(self) -> _FakeTensor:
        return self

    def numpy(self) -> Any:
        return self.array


class _FakeModule:
    def to(self, device: Any) -> _FakeModule:
        self.device = device
        return self

    def eval(self) -> _FakeModule:
        self.evaluating = True
        return self

    def __call__(self, *args: Any) -> Any:
        return self.forward(*args)  # type: ignore[attr-defined]


@pytest.fixture
def fake_torch(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    """A stand-in ``torch`` with just what the adapter calls: it checks the adapter's plumbing
    (threads, devices, build(), output mapping), not PyTorch."""
    threads: list[int] = []
    fake: Any = types.ModuleType("torch")
    fake.Tensor = _FakeTensor
    fake.from_numpy = _FakeTensor
    fake.device = str
    fake.set_num_threads = threads.append
    fake.inference_mode = contextlib.nullcontext
    fake.cuda = types.SimpleNamespace(is_available=lambda: False, device_count=lambda: 0)
    fake.nn = types.SimpleNamespace(Module=_FakeModule)
    monkeypatch.setitem(sys.modules, "torch", fake)
    return types.SimpleNamespace(module=fake, threads=threads)


NET_PY = """\
import torch

class Net(torch.nn.Module):
    def forward(self, a, b):
        return {RESULT}

def build():
    return Net()
"""


@pytest.mark.parametrize(
    "result",
    [
        "torch.Tensor(a.array + b.array)",
        "(torch.Tensor(a.array + b.array),)",
        "{'y': torch.Tensor(a.array + b.array), 'extra': a}",
    ],
)
def test_torch_plumbing_with_a_stand_in(
    tmp_path: Path, fake_torch: types.SimpleNamespace, result: str
) -> None:
    path = tmp_path / "net.py"
    path.write_text(NET_PY.replace("{RESULT}", result))
    ins = [TensorSpec("a", "FP32", (-1, 2)), TensorSpec("b", "FP32", (-1, 2))]
    model = TorchModel(name="net", inputs=ins, outputs=Y, file=path)
    assert model.platform == "pytorch_libtorch"
    replica = model.replica(Device("cpu", 0, threads=3))
    model.replica(Device("sim", 0, threads=5))
    assert fake_torch.threads == [3, 1]
    a = np.ones((2, 2), np.float32)
    a.flags.writeable = False  # arrays decoded from the wire may be read-only
    out = replica.predict({"a": a, "b": np.full((2, 2), 2.0, np.float32)})
    assert list(out) == ["y"]
    np.testing.assert_array_equal(out["y"], np.full((2, 2), 3.0))

    with pytest.raises(LanesError) as info:
        model.load(Device("cuda", 0))
    assert info.value.code == DEVICE_UNAVAILABLE
    assert info.value.message == "model 'net' on cuda:0: torch sees 0 CUDA devices"


def test_torch_refusals_with_a_stand_in(tmp_path: Path, fake_torch: types.SimpleNamespace) -> None:
    (tmp_path / "model.pt").write_bytes(b"")
    (tmp_path / "w.pt").write_bytes(b"")
    (tmp_path / "empty.py").write_text("")
    with pytest.raises(LanesError, match=re.escape("only for a .py file with build()")):
        TorchModel(
            name="n", inputs=X, outputs=Y, file=tmp_path / "model.pt", weights=tmp_path / "w.pt"
        )
    with pytest.raises(LanesError, match=re.escape("defines no build() function")):
        TorchModel(name="n", inputs=X, outputs=Y, file=tmp_path / "empty.py")
    with pytest.raises(LanesError, match="'t' is BYTES"):
        TorchModel(
            name="n", inputs=[TensorSpec("t", "BYTES", (1,))], outputs=Y, file=tmp_path / "model.pt"
        )


def test_torch_round_trip(tmp_path: Path) -> None:
    torch = pytest.importorskip(
        "torch", reason="torch is not installed (pip install 'lanes[torch]')"
    )
    torch.manual_seed(0)
    net = torch.nn.Linear(2, 2)
    torch.jit.save(torch.jit.script(net), str(tmp_path / "model.pt"))
    torch.save(net.state_dict(), str(tmp_path / "weights.pt"))
    (tmp_path / "net.py").write_text(
        "import torch\n\ndef build():\n    return torch.nn.Linear(2, 2)\n"
    )
    x = np.random.default_rng(0).standard_normal((3, 2)).astype(np.float32)
    with torch.inference_mode():
        expected = net(torch.from_numpy(x)).numpy()

    script = TorchModel(name="s", inputs=X, outputs=Y, file=tmp_path / "model.pt")
    built = TorchModel(
        name="b", inputs=X, outputs=Y, file=tmp_path / "net.py", weights=tmp_path / "weights.pt"
    )
    for model in (script, built):
        out = model.replica(Device("cpu", 0, threads=1)).predict({"x": x})
        np.testing.assert_allclose(out["y"], expected, rtol=1e-6)
    if torch.cuda.is_available():
        out = script.replica(Device("cuda", 0)).predict({"x": x})
        np.testing.assert_allclose(out["y"], expected, rtol=1e-4)
