"""The ``onnx`` adapter: an ONNX graph run by onnxruntime.

:class:`OnnxModel` checks its declaration against the graph when built (the ONNX file is read with
the ``onnx`` package, external weights left unread): every declared input and output must be in
the graph, with the same datatype and rank; a declared fixed dimension must agree with a fixed
graph dimension; every graph input without a default must be declared; and a model that batches
(``max_batch_size > 0``) needs a graph whose first dimension is dynamic on every declared tensor —
a graph exported with a fixed batch of 1 is refused with the fix in the message.

:meth:`OnnxModel.load` makes one ``InferenceSession`` per replica:

- ``cpu:N``: the CPU provider with ``intra_op_num_threads = device.threads``;
- ``sim:N``: the CPU provider with one thread (the server models the device's time);
- ``cuda:N``: ``CUDAExecutionProvider`` with ``device_id = N`` (onnxruntime-gpu); if onnxruntime
  has no CUDA provider, or falls back to the CPU when creating the session, the load fails with
  ``LanesError("device_unavailable", ...)`` naming the device and the providers there are.

Every session runs sequentially (``inter_op_num_threads = 1``, ``ORT_SEQUENTIAL``) and its
intra-op threads do not spin while idle, so a replica uses the cores it was given and no more.
:meth:`OnnxModel.predict` feeds the batch as is (the wire codec has checked the datatypes) and
returns the declared outputs by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lanes.errors import DEVICE_UNAVAILABLE, LanesError
from lanes.models.adapters import FileModel
from lanes.models.base import MODEL_INVALID, Arrays, Device, TensorSpec

# ONNX TensorProto element types and their KServe datatypes (BFLOAT16 and the float8s have none).
_ONNX_DATATYPES: dict[int, str] = {
    1: "FP32",
    2: "UINT8",
    3: "INT8",
    4: "UINT16",
    5: "INT16",
    6: "INT32",
    7: "INT64",
    8: "BYTES",
    9: "BOOL",
    10: "FP16",
    11: "FP64",
    12: "UINT32",
    13: "UINT64",
}

Dim = int | str | None
"""A graph dimension: a fixed size, a symbolic name, or ``None`` (unknown)."""


@dataclass(frozen=True)
class GraphTensor:
    """One input or output of an ONNX graph as the graph declares it."""

    name: str
    datatype: str | None
    """The KServe datatype; ``None`` when the graph's element type has none."""
    onnx_type: str
    """The ONNX type name, for messages (``FLOAT``, ``tensor(seq)``...)."""
    dims: tuple[Dim, ...] | None
    """The dimensions; ``None`` when the graph gives no shape."""
    optional: bool = False
    """An input with a default value (an initializer of the same name)."""

    def shape_text(self) -> str:
        if self.dims is None:
            return "unknown"
        return "[" + ", ".join("?" if d is None else str(d) for d in self.dims) + "]"


def read_graph(model_name: str, path: Path) -> tuple[list[GraphTensor], list[GraphTensor]]:
    """The inputs and outputs of the ONNX graph in ``path`` (weights in external files unread)."""
    import onnx

    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception as err:
        detail = " ".join(str(err).split()) or type(err).__name__
        raise LanesError(
            MODEL_INVALID, f"model '{model_name}': cannot read {path} as an ONNX model: {detail}"
        ) from None
    graph = proto.graph
    defaults = {init.name for init in graph.initializer}

    def tensor(value_info: Any, optional: bool) -> GraphTensor:
        kind = value_info.type.WhichOneof("value")
        if kind != "tensor_type":
            return GraphTensor(value_info.name, None, f"{kind or 'unknown'} (not a tensor)", None)
        tensor_type = value_info.type.tensor_type
        elem = int(tensor_type.elem_type)
        onnx_type = onnx.TensorProto.DataType.Name(elem) if elem else "UNDEFINED"
        dims: tuple[Dim, ...] | None = None
        if tensor_type.HasField("shape"):
            dims = tuple(_dim(d) for d in tensor_type.shape.dim)
        return GraphTensor(value_info.name, _ONNX_DATATYPES.get(elem), onnx_type, dims, optional)

    inputs = [tensor(v, v.name in defaults) for v in graph.input]
    outputs = [tensor(v, False) for v in graph.output]
    return inputs, outputs


def _dim(d: Any) -> Dim:
    kind = d.WhichOneof("value")
    if kind == "dim_value":
        return int(d.dim_value)
    if kind == "dim_param":
        return str(d.dim_param)
    return None


@dataclass
class OnnxModel(FileModel):
    """A model served from an ONNX file by onnxruntime (see the module docstring)."""

    platform: str = "onnxruntime_onnx"
    _session: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check_graph()

    # -- checks at build time -----------------------------------------------------------------

    def check_graph(self) -> None:
        """Refuse a declaration that disagrees with the ONNX graph (see the module docstring)."""
        graph_inputs, graph_outputs = read_graph(self.name, self.file)
        for role, specs, graph in (
            ("input", self.inputs, graph_inputs),
            ("output", self.outputs, graph_outputs),
        ):
            by_name = {t.name: t for t in graph}
            for spec in specs:
                if spec.name not in by_name:
                    names = ", ".join(f"'{t.name}'" for t in graph if not t.optional) or "none"
                    raise LanesError(
                        MODEL_INVALID,
                        f"model '{self.name}': {role} '{spec.name}' is not an {role} of "
                        f"{self.file.name}; its {role}s are {names}",
                    )
                self._check_tensor(role, spec, by_name[spec.name])
        declared = {s.name for s in self.inputs}
        for t in graph_inputs:
            if not t.optional and t.name not in declared:
                raise LanesError(
                    MODEL_INVALID,
                    f"model '{self.name}': {self.file.name} needs input '{t.name}' "
                    f"({t.onnx_type}, shape {t.shape_text()}), which is not declared: "
                    "add an [[inputs]] table for it",
                )

    def _check_tensor(self, role: str, spec: TensorSpec, t: GraphTensor) -> None:
        where = f"model '{self.name}': {role} '{spec.name}'"
        if t.datatype is None:
            raise LanesError(
                MODEL_INVALID,
                f"{where} is {t.onnx_type} in {self.file.name}, which has no KServe datatype",
            )
        if t.datatype != spec.datatype:
            raise LanesError(
                MODEL_INVALID,
                f"{where} is declared {spec.datatype} but is {t.datatype} ({t.onnx_type}) in "
                f"{self.file.name}",
            )
        if t.dims is None:
            return
        if len(t.dims) != len(spec.shape):
            raise LanesError(
                MODEL_INVALID,
                f"{where} is declared with shape {list(spec.shape)} (rank {len(spec.shape)}) "
                f"but has shape {t.shape_text()} (rank {len(t.dims)}) in {self.file.name}",
            )
        max_batch = self.batching.max_batch_size
        if max_batch > 0 and t.dims and isinstance(t.dims[0], int):
            raise LanesError(
                MODEL_INVALID,
                f"{where} has a fixed first dimension {t.dims[0]} in {self.file.name}, so it "
                f"cannot batch (max_batch_size = {max_batch}): export it with a dynamic batch "
                "dimension or set max_batch_size = 0",
            )
        for i, (want, have) in enumerate(zip(spec.shape, t.dims, strict=True)):
            if want != -1 and isinstance(have, int) and have != want:
                raise LanesError(
                    MODEL_INVALID,
                    f"{where} is declared with shape {list(spec.shape)} but dimension {i} is "
                    f"{have} in {self.file.name} (shape {t.shape_text()})",
                )

    # -- serving ------------------------------------------------------------------------------

    def load(self, device: Device) -> None:
        """Create this replica's ``InferenceSession`` on ``device``."""
        import onnxruntime as ort  # type: ignore[import-untyped]

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1 if device.kind == "sim" else max(1, device.threads)
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        providers: list[Any]
        if device.kind == "cuda":
            available = list(ort.get_available_providers())
            if "CUDAExecutionProvider" not in available:
                raise LanesError(
                    DEVICE_UNAVAILABLE,
                    f"model '{self.name}' on {device.name}: onnxruntime has no "
                    f"CUDAExecutionProvider (available: {', '.join(available)}): "
                    "install onnxruntime-gpu in place of onnxruntime",
                )
            providers = [("CUDAExecutionProvider", {"device_id": device.index})]
        else:
            providers = ["CPUExecutionProvider"]
        try:
            session = ort.InferenceSession(
                str(self.file), sess_options=options, providers=providers
            )
        except Exception as err:
            detail = " ".join(str(err).split()) or type(err).__name__
            code = DEVICE_UNAVAILABLE if device.kind == "cuda" else MODEL_INVALID
            raise LanesError(
                code, f"model '{self.name}' on {device.name}: onnxruntime cannot load it: {detail}"
            ) from None
        if device.kind == "cuda" and "CUDAExecutionProvider" not in session.get_providers():
            raise LanesError(
                DEVICE_UNAVAILABLE,
                f"model '{self.name}' on {device.name}: onnxruntime could not start "
                f"CUDAExecutionProvider (the session has {', '.join(session.get_providers())}): "
                "check the CUDA and cuDNN libraries onnxruntime-gpu needs",
            )
        self._session = session

    @property
    def session(self) -> Any:
        """This replica's ``onnxruntime.InferenceSession`` (``None`` before :meth:`load`)."""
        return self._session

    def predict(self, batch: Arrays) -> Arrays:
        """Run the graph on ``batch`` (input name → array) and return the declared outputs."""
        if self._session is None:
            raise self._not_loaded()
        names = [s.name for s in self.outputs]
        values = self._session.run(names, dict(batch))
        return dict(zip(names, values, strict=True))
