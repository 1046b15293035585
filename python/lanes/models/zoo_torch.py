"""The demo zoo in PyTorch: the zoo's four models rebuilt as ``torch.nn.Module`` objects with the
very weights of their ONNX graphs, so hosts whose GPUs PyTorch drives (but onnxruntime does
not: no ``onnxruntime-gpu``) can run the zoo on CUDA.

The weights are not drawn again: :func:`torch_module` reads them from the ONNX ``ModelProto``'s
initializers (:func:`lanes.models.zoo.model_proto`, or the cached ONNX file a served model
points at), so both backends compute the same function. The modules mirror the graphs:

- ``char``: ``Sequential`` of 3 x (``Conv2d`` 3x3 same padding, ``ReLU``, ``MaxPool2d``) →
  ``Flatten`` → ``Linear`` → ``ReLU`` → ``Linear`` (ONNX ``Gemm`` with ``transB`` keeps
  ``[out, in]`` weights, as ``Linear`` does).
- ``line``: the conv blocks → ``[T, n, 4c]`` (ONNX ``Transpose`` + ``Reshape``) → a bidirectional
  ``GRU`` → ``[n, T, 2h]`` → ``Linear`` (ONNX ``MatMul`` + ``Add``: the weight transposed). The
  ONNX GRU uses ``linear_before_reset = 1``, which is ``torch.nn.GRU``'s formula; its gate
  blocks are ordered ``z, r, h`` where torch's are ``r, z, n``, so the blocks are reordered, and
  its bias ``B`` is ``[Wb, Rb]``, torch's ``bias_ih`` and ``bias_hh``.

Serving
    ``zoo_models(backend="torch")`` (:func:`lanes.models.zoo.zoo_models`) gives
    :class:`TorchZooModel` objects: the same wire form as the ONNX zoo (``preprocess`` and
    ``postprocess`` are shared), ``load(device)`` builds the module from the model's cached ONNX
    file and puts it on the device in ``eval()`` mode, float32, and ``predict`` runs it under
    ``torch.inference_mode()``. ``cuda:N`` uses ``cuda:N`` (``device_unavailable`` when torch
    sees no such GPU); ``cpu`` and ``sim`` run on the CPU after ``torch.set_num_threads``
    (``device.threads`` on ``cpu``, 1 on ``sim``) — torch's thread pool is process-wide, so the
    CPU replica loaded last sets it for every torch model in the process. On CUDA, PyTorch's
    default lets cuDNN convolutions use TF32 on Ampere and newer GPUs, so logits differ from the
    CPU's in about the third significant digit.

    With ``cuda_graphs`` (``lanes serve --cuda-graphs``), a ``cuda:N`` replica runs its network
    through :class:`lanes.models.cuda_graphs.GraphRunner`: a CUDA graph per warmed batch size
    and executor thread, captured at warm-up, replayed with one launch per batch (a batch padded
    to the next warmed size). ``cpu`` and
    ``sim`` replicas run eagerly whatever the setting.

torch is an optional extra: without it, making a torch zoo model or module raises ``LanesError``
with code ``missing_dependency`` and a message ending ``pip install 'lanes[torch]'``.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from lanes.errors import MISSING_DEPENDENCY, LanesError
from lanes.models.adapters.torch import torch_device
from lanes.models.base import MODEL_INVALID, Arrays, Device
from lanes.models.zoo import ZooModel, model_proto, spec


def import_torch(model_name: str) -> Any:
    """The ``torch`` module, or ``LanesError("missing_dependency")`` when it cannot be imported."""
    try:
        import torch  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        raise LanesError(
            MISSING_DEPENDENCY,
            f"zoo model '{model_name}' on the torch backend needs PyTorch: "
            "pip install 'lanes[torch]'",
        ) from None
    return torch


# -- weights ------------------------------------------------------------------------------------


def _gates(onnx_gates: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """ONNX GRU gate blocks ``z, r, h`` (stacked on axis 0) in torch's order ``r, z, n``."""
    z, r, h = np.split(onnx_gates, 3, axis=0)
    return np.concatenate([r, z, h], axis=0)


def _invalid(name: str, why: str) -> LanesError:
    return LanesError(MODEL_INVALID, f"zoo model '{name}': the ONNX graph {why}")


def _attribute(node: Any, key: str, default: Any) -> Any:
    from onnx import helper  # type: ignore[import-untyped, unused-ignore]

    for a in node.attribute:
        if a.name == key:
            return helper.get_attribute_value(a)
    return default


def zoo_state(name: str, proto: Any) -> tuple[dict[str, npt.NDArray[np.float32]], list[Any]]:
    """The weights of zoo model ``name``'s ONNX ``proto`` as the ``state_dict`` of its torch
    module (keys as :func:`torch_module` names them, float32 numpy arrays), and the max-pool
    kernels of its three conv blocks. A graph that is not the zoo's shape raises
    ``LanesError("model_invalid")``."""
    from onnx import numpy_helper

    task = spec(name).task
    init = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    nodes: dict[str, list[Any]] = {}
    for node in proto.graph.node:
        nodes.setdefault(node.op_type, []).append(node)

    def weights(node: Any, *positions: int) -> list[npt.NDArray[np.float32]]:
        try:
            return [np.array(init[node.input[i]], dtype=np.float32) for i in positions]
        except (IndexError, KeyError):
            raise _invalid(name, f"has a {node.op_type} node without constant weights") from None

    def ops(op: str, count: int) -> list[Any]:
        found = nodes.get(op, [])
        if len(found) != count:
            raise _invalid(name, f"has {len(found)} {op} nodes, not {count}")
        return found

    state: dict[str, npt.NDArray[np.float32]] = {}
    for i, conv in enumerate(ops("Conv", 3), 1):
        state[f"features.conv{i}.weight"], state[f"features.conv{i}.bias"] = weights(conv, 1, 2)
    pools = [list(_attribute(p, "kernel_shape", [])) for p in ops("MaxPool", 3)]
    for pool, node in zip(pools, nodes["MaxPool"], strict=True):
        if len(pool) != 2 or list(_attribute(node, "strides", [])) != pool:
            raise _invalid(name, f"has a MaxPool with kernel {pool}, not 2-D with equal strides")
    if task == "char":
        for i, gemm in enumerate(ops("Gemm", 2), 1):
            if _attribute(gemm, "transB", 0) != 1:
                raise _invalid(name, "has a Gemm node without transB = 1")
            state[f"fc{i}.weight"], state[f"fc{i}.bias"] = weights(gemm, 1, 2)
        return state, pools
    (gru,) = ops("GRU", 1)
    if _attribute(gru, "linear_before_reset", 0) != 1:
        raise _invalid(name, "has a GRU without linear_before_reset = 1, which torch cannot run")
    if _attribute(gru, "direction", b"forward") not in (b"bidirectional", "bidirectional"):
        raise _invalid(name, "has a GRU that is not bidirectional")
    w, r, b = weights(gru, 1, 2, 3)
    if w.shape[0] != 2 or r.shape[0] != 2 or b.shape != (2, 2 * r.shape[1]):
        raise _invalid(
            name, f"has GRU weights of shapes {list(w.shape)}, {list(r.shape)}, {list(b.shape)}"
        )
    for d, suffix in enumerate(("", "_reverse")):
        wb, rb = np.split(b[d], 2)
        state[f"gru.weight_ih_l0{suffix}"] = _gates(w[d])
        state[f"gru.weight_hh_l0{suffix}"] = _gates(r[d])
        state[f"gru.bias_ih_l0{suffix}"] = _gates(wb)
        state[f"gru.bias_hh_l0{suffix}"] = _gates(rb)
    (matmul,) = ops("MatMul", 1)
    (add,) = ops("Add", 1)
    (proj,) = weights(matmul, 1)
    state["proj.weight"] = np.ascontiguousarray(proj.T)
    (state["proj.bias"],) = weights(add, 1)
    return state, pools


# -- modules ------------------------------------------------------------------------------------


@functools.cache
def _line_net_type(torch: Any) -> Any:
    """The ``nn.Module`` class of the line models (made once, when torch is first needed)."""

    class LineNet(torch.nn.Module):  # type: ignore[misc]
        """Conv features → ``[T, n, 4c]`` → bidirectional GRU → per-step projection."""

        def __init__(self, features: Any, gru: Any, proj: Any) -> None:
            super().__init__()
            self.features, self.gru, self.proj = features, gru, proj

        def forward(self, x: Any) -> Any:
            y = self.features(x)  # [n, c, 4, T]
            y = y.permute(3, 0, 1, 2).flatten(2)  # [T, n, 4c], as ONNX Transpose + Reshape
            y, _ = self.gru(y)  # [T, n, 2h]: forward then backward direction
            return self.proj(y.transpose(0, 1))  # [n, T, classes]

    return LineNet


def torch_module(name: str, proto: Any | None = None) -> Any:
    """Zoo model ``name`` as a ``torch.nn.Module`` computing what its ONNX graph computes, with
    its weights: ``x [n, 1, 32, W]`` float32 → ``logits``. The weights are read from ``proto``
    (an ONNX ``ModelProto``; default :func:`lanes.models.zoo.model_proto` ``(name)``). The module
    is on the CPU, float32, in ``eval()`` mode.

    Without torch this raises ``LanesError("missing_dependency")``; a ``proto`` that is not the
    zoo model's graph raises ``LanesError("model_invalid")``; an unknown ``name``
    ``LanesError("bad_argument")``.
    """
    torch = import_torch(name)
    nn = torch.nn
    s = spec(name)
    if proto is None:
        proto = model_proto(name)
    state, pools = zoo_state(name, proto)
    classes = len(s.labels)
    blocks: OrderedDict[str, Any] = OrderedDict()
    inputs = (1, *s.channels[:2])
    for i, (cin, cout, pool) in enumerate(zip(inputs, s.channels, pools, strict=True), 1):
        blocks[f"conv{i}"] = nn.Conv2d(cin, cout, 3, padding=1)
        blocks[f"relu{i}"] = nn.ReLU()
        blocks[f"pool{i}"] = nn.MaxPool2d(tuple(pool))
    features = nn.Sequential(blocks)
    if s.task == "char":
        flat = s.channels[2] * (s.input_shape[1] // 8) * (s.input_shape[2] // 8)
        layers = (
            ("features", features),
            ("flatten", nn.Flatten()),
            ("fc1", nn.Linear(flat, s.hidden)),
            ("relu", nn.ReLU()),
            ("fc2", nn.Linear(s.hidden, classes)),
        )
        net = nn.Sequential(OrderedDict(layers))
    else:
        gru = nn.GRU(s.channels[2] * s.input_shape[1] // 8, s.hidden, bidirectional=True)
        net = _line_net_type(torch)(features, gru, nn.Linear(2 * s.hidden, classes))
    tensors = {k: torch.from_numpy(v) for k, v in state.items()}
    try:
        net.load_state_dict(tensors, strict=True)
    except RuntimeError as err:
        raise _invalid(name, f"does not fit the zoo's {s.task} network: {err}") from None
    net.eval()
    return net


def read_proto(path: Path, name: str) -> Any:
    """The ONNX ``ModelProto`` in ``path``; ``LanesError("model_invalid")`` when it cannot be
    read."""
    import onnx  # type: ignore[import-untyped, unused-ignore]

    try:
        return onnx.load(str(path))
    except Exception as err:
        raise LanesError(
            MODEL_INVALID, f"zoo model '{name}': cannot read its ONNX file {path}: {err}"
        ) from err


# -- serving ------------------------------------------------------------------------------------


@dataclass
class TorchZooModel(ZooModel):
    """A zoo model run by PyTorch: the wire form of :class:`lanes.models.zoo.ZooModel`, the
    network of :func:`torch_module` with the weights of the ONNX file at ``path``."""

    platform: str = "pytorch_libtorch"
    cuda_graphs: bool = False
    _net: Any = field(default=None, init=False, repr=False, compare=False)
    _target: Any = field(default=None, init=False, repr=False, compare=False)
    _graphs: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        import_torch(self.name)

    def load(self, device: Device) -> None:
        """Build the module from ``path``'s weights and put it on ``device`` (see the module
        docstring)."""
        torch = import_torch(self.name)
        target = torch_device(torch, self.name, device)
        net = torch_module(self.name, read_proto(self.path, self.name))
        self._net, self._target = net.to(target), target
        if self.cuda_graphs and target.type == "cuda":
            from lanes.models.cuda_graphs import GraphRunner, buckets

            sizes = buckets(self.batching.max_batch_size)
            self._graphs = GraphRunner(torch, self._net, target, self.name, sizes)

    def predict(self, batch: Arrays) -> Arrays:
        if self._net is None:
            raise RuntimeError(f"model '{self.name}' is not loaded: use replica(device)")
        torch = import_torch(self.name)
        x = np.ascontiguousarray(batch["x"], dtype=np.float32)
        if not x.flags.writeable:
            x = x.copy()
        with torch.inference_mode():
            if self._graphs is not None:
                return {"logits": self._graphs(x)}
            logits = self._net(torch.from_numpy(x).to(self._target))
            return {"logits": logits.cpu().numpy()}


__all__ = ["TorchZooModel", "import_torch", "read_proto", "torch_module", "zoo_state"]
