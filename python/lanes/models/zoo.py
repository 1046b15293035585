"""The built-in demo model zoo: four small OCR-shaped ONNX models, generated in code.

The zoo stands in for a real OCR deployment's model mix without downloading anything:

- ``char_cnn``: a 32x32 grayscale glyph → one of 3,755 characters (a small CNN).
- ``line_rnn_zh``: a text line → CTC over 6,000 symbols plus blank (a conv feature extractor that
  collapses the height, a bidirectional GRU over the width, a per-step projection).
- ``line_rnn_en``: the same structure over the 95 printable ASCII characters plus blank.
- ``misc_cls``: a 32x32 image → its orientation (``0``, ``90``, ``180``, ``270``).

The weights are random (``np.random.default_rng`` with a fixed seed per model), so the answers
are meaningless but deterministic, and the run-time costs are those of real models of this shape:
on one CPU thread a line model costs roughly 5-20x the glyph classifier per item.

Generation and caching
    :func:`onnx_path` generates a model's ONNX file on first use into
    ``<cache_dir>/<ZOO_VERSION>/<name>.onnx`` (``cache_dir`` defaults to ``$LANES_CACHE/zoo``, or
    ``~/.cache/lanes/zoo`` when ``LANES_CACHE`` is unset). Files are written atomically (a
    temporary file beside the target, then :func:`os.replace`), so processes that race on first
    use never see half a file; generation is deterministic, so the racers write the same bytes.
    :data:`ZOO_VERSION` is part of the path: changing the generator means bumping it, which
    leaves old files unused.

Serving
    :func:`zoo_models` returns the models as :class:`OnnxZooModel` objects that take encoded
    images on the wire (input ``image``, ``BYTES`` ``[-1]``); raw grayscale arrays (``UINT8``
    0-255 or ``FP32`` 0-1, shape ``[n, H, W]`` or ``[n, 1, H, W]``) are accepted under the same
    name. Outputs: ``label`` / ``class`` / ``score`` for the classifiers, ``text`` for the line
    models. :func:`export` writes the raw ONNX models (``x`` → ``logits``, no pre- or
    post-processing) as a model repository for the generic ``onnx`` adapter.
    ``zoo_models(backend="torch")`` gives the same models rebuilt in PyTorch with the same weights
    (:mod:`lanes.models.zoo_torch`, the optional ``torch`` extra), for hosts whose GPUs PyTorch
    can drive but onnxruntime cannot.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from lanes.errors import BAD_ARGUMENT, BAD_INPUT, DEVICE_UNAVAILABLE, OUTPUT_FAILED, LanesError
from lanes.files import write_atomic
from lanes.models.base import MODEL_INVALID, Arrays, Batching, Cost, Device, Model, TensorSpec
from lanes.models.imaging import (
    CHAR_SIZE,
    LINE_HEIGHT,
    MAX_PIXELS,
    W_FIXED,
    ctc_greedy,
    decode_gray,
    resize_char,
    resize_line,
    softmax,
)

ZOO_NAMES: tuple[str, ...] = ("char_cnn", "line_rnn_zh", "line_rnn_en", "misc_cls")
"""The zoo's models, in a fixed order."""
ZOO_VERSION = "v1-opset17"
"""The generator's version: a folder of the cache path. Bump it whenever a generated file's bytes
would change."""
OPSET = 17
"""The ONNX operator set of every zoo model."""
IR_VERSION = 8
"""The ONNX IR version written into every zoo model (fixed, so the bytes do not depend on the
installed ``onnx`` package's default)."""
INPUT = "image"
"""The wire input of every zoo model."""

PRINTABLE: tuple[str, ...] = tuple(chr(c) for c in range(0x20, 0x7F))
"""The 95 printable ASCII characters, space to ``~``."""


def cjk(count: int) -> tuple[str, ...]:
    """The first ``count`` CJK unified ideographs, from U+4E00 upward."""
    return tuple(chr(0x4E00 + i) for i in range(count))


@dataclass(frozen=True)
class ZooSpec:
    """How one zoo model is built and served.

    ``task`` is ``char`` (a square glyph → one class) or ``line`` (a text line → CTC text, class 0
    the blank). ``channels`` are the three conv blocks' widths; ``hidden`` is the width of the
    classifier's hidden layer (``char``) or of the GRU in each direction (``line``). ``cost`` is
    the measured CPU run time of :meth:`OnnxZooModel.predict` on one intra-op thread.
    """

    name: str
    task: str
    seed: int
    labels: tuple[str, ...]
    channels: tuple[int, int, int]
    hidden: int
    max_batch_size: int
    cost: Cost
    timeout_ms: float = 1000.0

    @property
    def input_shape(self) -> tuple[int, int, int]:
        """The raw model's per-item input shape, ``(1, height, width)``."""
        if self.task == "char":
            return (1, CHAR_SIZE, CHAR_SIZE)
        return (1, LINE_HEIGHT, W_FIXED)

    @property
    def output_shape(self) -> tuple[int, ...]:
        """The raw model's per-item ``logits`` shape: ``(classes,)`` or ``(steps, classes)``."""
        if self.task == "char":
            return (len(self.labels),)
        return (W_FIXED // 4, len(self.labels))

    @property
    def batching(self) -> Batching:
        return Batching(
            max_batch_size=self.max_batch_size,
            batch_timeout_micros=0,
            num_batch_threads=1,
            max_enqueued_batches=64,
        )


# Costs: ``predict`` on CPU (onnxruntime 1.31, one intra-op thread, an x86-64 core shared with
# other work), the median of 31 runs at batch 1 and at batch 8, fitted as ``fixed + per_item x
# rows``. Per item at batch 8: char_cnn 0.23 ms, line_rnn_zh 3.6 ms (16x), line_rnn_en 1.7 ms
# (7x), misc_cls 0.05 ms.
SPECS: dict[str, ZooSpec] = {
    s.name: s
    for s in (
        ZooSpec(
            name="char_cnn",
            task="char",
            seed=3755,
            labels=cjk(3755),
            channels=(32, 64, 128),
            hidden=256,
            max_batch_size=16,
            cost=Cost(fixed_ms=0.06, per_item_ms=0.22),
        ),
        ZooSpec(
            name="line_rnn_zh",
            task="line",
            seed=6000,
            labels=("", *PRINTABLE, *cjk(6000 - len(PRINTABLE))),
            channels=(32, 64, 128),
            hidden=256,
            max_batch_size=8,
            cost=Cost(fixed_ms=1.0, per_item_ms=3.5),
        ),
        ZooSpec(
            name="line_rnn_en",
            task="line",
            seed=96,
            labels=("", *PRINTABLE),
            channels=(32, 64, 128),
            hidden=256,
            max_batch_size=8,
            cost=Cost(fixed_ms=0.5, per_item_ms=1.6),
        ),
        ZooSpec(
            name="misc_cls",
            task="char",
            seed=4,
            labels=("0", "90", "180", "270"),
            channels=(16, 32, 64),
            hidden=64,
            max_batch_size=16,
            cost=Cost(fixed_ms=0.02, per_item_ms=0.05),
        ),
    )
}
"""Every zoo model's spec, by name."""


def spec(name: str) -> ZooSpec:
    """The spec of zoo model ``name``; ``LanesError("bad_argument")`` for a name not in the zoo."""
    try:
        return SPECS[name]
    except KeyError:
        raise LanesError(
            BAD_ARGUMENT, f"zoo model '{name}': unknown; the zoo has " + ", ".join(ZOO_NAMES)
        ) from None


# -- graph generation ---------------------------------------------------------------------------


class _Builder:
    """Accumulates the nodes and initializers of one graph, drawing weights from one generator.

    Weight rule: conv and dense weights are He-normal (``N(0, 2 / fan_in)``), the output layer's
    ``N(0, 1 / fan_in)``, GRU weights ``U(-1/√h, 1/√h)`` (PyTorch's default), biases
    ``N(0, 0.01²)``; all float32, drawn in graph order, so a seed fixes every byte.
    """

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.count = 0

    def name(self, kind: str) -> str:
        self.count += 1
        return f"{kind}_{self.count}"

    def const(self, name: str, value: npt.NDArray[Any]) -> str:
        from onnx import numpy_helper  # type: ignore[import-untyped, unused-ignore]

        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def normal(self, name: str, shape: tuple[int, ...], std: float) -> str:
        value = self.rng.normal(0.0, std, size=shape).astype(np.float32)
        return self.const(name, value)

    def uniform(self, name: str, shape: tuple[int, ...], bound: float) -> str:
        value = self.rng.uniform(-bound, bound, size=shape).astype(np.float32)
        return self.const(name, value)

    def node(self, op: str, inputs: Sequence[str], output: str | None = None, **attrs: Any) -> str:
        from onnx import helper

        out = output or self.name(op.lower())
        self.nodes.append(helper.make_node(op, list(inputs), [out], name=f"{out}_node", **attrs))
        return out

    def conv_block(self, x: str, cin: int, cout: int, pool: tuple[int, int]) -> str:
        """3x3 convolution (same padding) → ReLU → max-pool by ``pool``."""
        n = self.name("conv")
        w = self.normal(f"{n}.weight", (cout, cin, 3, 3), (2.0 / (cin * 9)) ** 0.5)
        b = self.normal(f"{n}.bias", (cout,), 0.01)
        y = self.node("Conv", [x, w, b], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
        y = self.node("Relu", [y])
        return self.node("MaxPool", [y], kernel_shape=list(pool), strides=list(pool))

    def dense(self, x: str, cin: int, cout: int, std: float, output: str | None = None) -> str:
        """``x @ W.T + b`` over the last axis of a 2-D tensor (``Gemm`` with ``transB``)."""
        n = self.name("fc")
        w = self.normal(f"{n}.weight", (cout, cin), std)
        b = self.normal(f"{n}.bias", (cout,), 0.01)
        return self.node("Gemm", [x, w, b], output, transB=1)


def model_proto(name: str) -> Any:
    """The ONNX ``ModelProto`` of zoo model ``name``, checked with ``onnx.checker``.

    Graphs (``n`` is the symbolic ``batch`` dimension):

    - ``char``: ``x [n, 1, 32, 32]`` → 3 x (conv 3x3, ReLU, max-pool 2x2) → flatten → dense +
      ReLU → dense → ``logits [n, classes]``.
    - ``line``: ``x [n, 1, 32, W]`` → conv blocks pooling 2x2, 2x2, 2x1 → ``[n, c, 4, W/4]`` →
      the width becomes time, channels x height the features: ``[W/4, n, 4c]`` → bidirectional
      GRU → ``[n, W/4, 2h]`` → dense → ``logits [n, W/4, classes]``.
    """
    import onnx  # type: ignore[import-untyped, unused-ignore]
    from onnx import TensorProto, helper

    s = spec(name)
    g = _Builder(s.seed)
    c1, c2, c3 = s.channels
    classes = len(s.labels)
    if s.task == "char":
        y = g.conv_block("x", 1, c1, (2, 2))
        y = g.conv_block(y, c1, c2, (2, 2))
        y = g.conv_block(y, c2, c3, (2, 2))
        y = g.node("Flatten", [y], axis=1)
        features = c3 * (CHAR_SIZE // 8) ** 2
        y = g.dense(y, features, s.hidden, (2.0 / features) ** 0.5)
        y = g.node("Relu", [y])
        g.dense(y, s.hidden, classes, (1.0 / s.hidden) ** 0.5, output="logits")
    else:
        y = g.conv_block("x", 1, c1, (2, 2))
        y = g.conv_block(y, c1, c2, (2, 2))
        y = g.conv_block(y, c2, c3, (2, 1))
        features = c3 * LINE_HEIGHT // 8
        h = s.hidden
        keep_two = g.const("shape_keep2", np.array([0, 0, -1], dtype=np.int64))
        y = g.node("Transpose", [y], perm=[3, 0, 1, 2])  # [T, n, c, 4]
        y = g.node("Reshape", [y, keep_two])  # [T, n, 4c]
        bound = h**-0.5
        w = g.uniform("gru.W", (2, 3 * h, features), bound)
        r = g.uniform("gru.R", (2, 3 * h, h), bound)
        b = g.uniform("gru.B", (2, 6 * h), bound)
        y = g.node(
            "GRU",
            [y, w, r, b],
            hidden_size=h,
            direction="bidirectional",
            linear_before_reset=1,
        )  # [T, 2, n, h]
        y = g.node("Transpose", [y], perm=[2, 0, 1, 3])  # [n, T, 2, h]
        y = g.node("Reshape", [y, keep_two])  # [n, T, 2h]
        proj = g.normal("proj.weight", (2 * h, classes), (1.0 / (2 * h)) ** 0.5)
        bias = g.normal("proj.bias", (classes,), 0.01)
        y = g.node("MatMul", [y, proj])
        g.node("Add", [y, bias], output="logits")

    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", *s.input_shape])
    y_info = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", *s.output_shape])
    graph = helper.make_graph(g.nodes, name, [x_info], [y_info], initializer=g.initializers)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="lanes-zoo",
        producer_version=ZOO_VERSION,
        doc_string=f"lanes demo zoo model {name} (random weights, seed {s.seed})",
    )
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    return model


def generate(name: str) -> bytes:
    """The serialized ONNX file of zoo model ``name``: the same bytes on every call."""
    data: bytes = model_proto(name).SerializeToString()
    return data


def default_cache_dir() -> Path:
    """``$LANES_CACHE/zoo``, or ``~/.cache/lanes/zoo`` when ``LANES_CACHE`` is unset or empty."""
    root = os.environ.get("LANES_CACHE")
    base = Path(root) if root else Path.home() / ".cache" / "lanes"
    return base / "zoo"


_GENERATING = threading.Lock()


def onnx_path(name: str, cache_dir: Path | None = None) -> Path:
    """The cached ONNX file of zoo model ``name``, generated first if it is missing.

    The file is ``<cache_dir>/<ZOO_VERSION>/<name>.onnx`` (``cache_dir`` defaults to
    :func:`default_cache_dir`). A missing file is generated and written atomically; threads of
    one process generate one at a time, processes may race harmlessly (same bytes, atomic
    rename). A cache that cannot be written raises ``LanesError("output_failed", ...)``.
    """
    spec(name)
    directory = (cache_dir if cache_dir is not None else default_cache_dir()) / ZOO_VERSION
    path = directory / f"{name}.onnx"
    if path.is_file():
        return path
    with _GENERATING:
        if not path.is_file():
            _mkdir(directory)
            _write_bytes(path, generate(name))
    return path


def _mkdir(directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        reason = err.strerror or str(err)
        raise LanesError(OUTPUT_FAILED, f"cannot create {directory}: {reason}") from err


def _write_bytes(path: Path, data: bytes) -> None:
    def write(f: IO[bytes]) -> None:
        f.write(data)

    write_atomic(path, write)


# -- serving ------------------------------------------------------------------------------------


def onnx_session(path: Path, device: Device) -> Any:
    """An ``onnxruntime.InferenceSession`` for the ONNX file ``path`` on ``device``.

    Options: sequential execution, one inter-op thread, ``device.threads`` intra-op threads
    (``sim`` devices run on the CPU with one), and no spin-waiting of idle intra-op threads, so a
    replica does not burn CPU that pre- and post-processing need. ``cuda`` devices use the CUDA
    provider with ``device_id = device.index``; without that provider, or when it fails to take
    the session, this raises ``LanesError("device_unavailable", ...)``.
    """
    import onnxruntime as ort  # type: ignore[import-untyped, unused-ignore]

    options = ort.SessionOptions()
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.inter_op_num_threads = 1
    options.intra_op_num_threads = 1 if device.kind == "sim" else max(1, device.threads)
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    providers: list[Any]
    if device.kind == "cuda":
        if "CUDAExecutionProvider" not in ort.get_available_providers():
            raise LanesError(
                DEVICE_UNAVAILABLE,
                f"device {device.name}: onnxruntime has no CUDAExecutionProvider "
                f"(available: {', '.join(ort.get_available_providers())})",
            )
        providers = [("CUDAExecutionProvider", {"device_id": device.index})]
    elif device.kind in ("cpu", "sim"):
        providers = ["CPUExecutionProvider"]
    else:
        raise LanesError(DEVICE_UNAVAILABLE, f"device {device.name}: unknown device kind")
    try:
        session = ort.InferenceSession(str(path), sess_options=options, providers=providers)
    except Exception as err:
        code = DEVICE_UNAVAILABLE if device.kind == "cuda" else MODEL_INVALID
        raise LanesError(
            code, f"{path}: onnxruntime cannot load it on {device.name}: {err}"
        ) from err
    if device.kind == "cuda" and "CUDAExecutionProvider" not in session.get_providers():
        raise LanesError(
            DEVICE_UNAVAILABLE, f"device {device.name}: the CUDA provider could not be started"
        )
    return session


BACKENDS: tuple[str, ...] = ("onnx", "torch")
"""The runtimes that can serve the zoo: ``onnx`` (onnxruntime, :class:`OnnxZooModel`) and
``torch`` (PyTorch, :class:`lanes.models.zoo_torch.TorchZooModel`, the optional extra)."""


@dataclass
class ZooModel(Model):
    """A zoo model: wire images in, labels or text out, a network in between. Subclasses
    (:class:`OnnxZooModel`, :class:`lanes.models.zoo_torch.TorchZooModel`) supply ``load`` and
    ``predict``; the wire form is theirs in common.

    - ``preprocess``: the ``image`` input — encoded images (``BYTES [n]``) or raw grayscale arrays
      (``UINT8`` 0-255 or ``FP32`` 0-1, ``[n, H, W]`` or ``[n, 1, H, W]``) — becomes
      ``{"x": float32 [n, 1, 32, W]}`` (:func:`~lanes.models.imaging.resize_char` or
      :func:`~lanes.models.imaging.resize_line`). Bad input raises ``LanesError("bad_input")``.
    - ``predict``: ``{"x"}`` → ``{"logits"}``.
    - ``postprocess``: ``char`` models give ``label`` (``BYTES [n]``), ``class`` (``INT64 [n]``)
      and ``score`` (``FP32 [n]``, the softmax probability of the class); ``line`` models give
      ``text`` (``BYTES [n]``), CTC greedy decoding.

    ``path`` is the model's generated ONNX file: the graph that onnxruntime runs, and the source
    of the weights for the other backends.
    """

    path: Path = Path("model.onnx")
    task: str = "char"
    labels: tuple[str, ...] = field(default=(), repr=False)
    _symbols: npt.NDArray[np.object_] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.task not in ("char", "line"):
            raise LanesError(MODEL_INVALID, f"model '{self.name}': task '{self.task}'")
        self._symbols = np.asarray(self.labels, dtype=object)

    def preprocess(self, inputs: Arrays) -> Arrays:
        if INPUT not in inputs:
            got = ", ".join(f"'{k}'" for k in inputs) or "none"
            raise LanesError(BAD_INPUT, f"model '{self.name}': needs input '{INPUT}' (got {got})")
        images = wire_images(inputs[INPUT])
        if self.task == "char":
            items = [resize_char(img, CHAR_SIZE) for img in images]
        else:
            items = [resize_line(img, LINE_HEIGHT, W_FIXED) for img in images]
        return {"x": np.stack(items)}

    def sample(self) -> Arrays:
        """A real sample image of this model's task (a glyph or a text line, fixed seed; see
        :mod:`lanes.models.images`), pre-processed: the warm-up input."""
        from lanes.models.images import glyph_image, line_image

        draw = glyph_image if self.task == "char" else line_image
        png = draw(np.random.default_rng(0))
        return self.preprocess({INPUT: np.array([png], dtype=object)})

    def postprocess(self, output: Arrays) -> Arrays:
        logits = output["logits"]
        if self.task == "line":
            return {"text": np.array(ctc_greedy(logits, self._symbols), dtype=object)}
        probs = softmax(logits)
        cls = probs.argmax(axis=1).astype(np.int64)
        return {
            "label": self._symbols[cls].astype(object),
            "class": cls,
            "score": probs[np.arange(len(cls)), cls].astype(np.float32),
        }


@dataclass
class OnnxZooModel(ZooModel):
    """A zoo model run by onnxruntime: ``predict`` runs the ONNX graph at ``path`` with the
    session of :meth:`load` (see :func:`onnx_session`)."""

    _session: Any = field(default=None, init=False, repr=False, compare=False)

    def load(self, device: Device) -> None:
        self._session = onnx_session(self.path, device)

    def predict(self, batch: Arrays) -> Arrays:
        if self._session is None:
            raise RuntimeError(f"model '{self.name}' is not loaded: use replica(device)")
        (logits,) = self._session.run(["logits"], {"x": batch["x"]})
        return {"logits": logits}


def wire_images(data: npt.NDArray[Any]) -> list[npt.NDArray[Any]]:
    """The images of an ``image`` input, each a 2-D grayscale array (``uint8`` or float).

    Accepted: a ``BYTES`` tensor ``[n]`` of encoded images (decoded with
    :func:`~lanes.models.imaging.decode_gray`), or a ``UINT8`` / float tensor ``[n, H, W]`` or
    ``[n, 1, H, W]`` of gray levels. Anything else raises ``LanesError("bad_input", ...)`` naming
    the datatype or shape.
    """
    shape = list(data.shape)
    if data.dtype.kind in "OS":
        if data.ndim != 1 or data.shape[0] == 0:
            raise LanesError(
                BAD_INPUT, f"input '{INPUT}': BYTES shape {shape}: expected [n], n >= 1"
            )
        images = []
        for i, element in enumerate(data):
            if isinstance(element, str):
                raise LanesError(BAD_INPUT, f"input '{INPUT}'[{i}]: text, not encoded image bytes")
            try:
                images.append(decode_gray(element))
            except LanesError as err:
                raise LanesError(err.code, f"input '{INPUT}'[{i}]: {err.message}") from None
        return images
    if data.dtype != np.uint8 and data.dtype.kind != "f":
        raise LanesError(
            BAD_INPUT,
            f"input '{INPUT}': dtype {data.dtype}: expected BYTES (encoded images), UINT8 or FP32",
        )
    if data.ndim == 4 and data.shape[1] == 1:
        data = data[:, 0]
    if data.ndim != 3 or 0 in data.shape:
        raise LanesError(
            BAD_INPUT, f"input '{INPUT}': shape {shape}: expected [n, H, W] or [n, 1, H, W]"
        )
    if data.shape[1] * data.shape[2] > MAX_PIXELS:
        raise LanesError(BAD_INPUT, f"input '{INPUT}': shape {shape}: images over {MAX_PIXELS} px")
    return list(data)


def zoo_model(
    name: str, cache_dir: Path | None = None, backend: str = "onnx", cuda_graphs: bool = False
) -> ZooModel:
    """Zoo model ``name``, its ONNX file generated if missing; not loaded.

    ``backend`` picks the runtime (:data:`BACKENDS`): ``onnx`` gives an :class:`OnnxZooModel`,
    ``torch`` a :class:`lanes.models.zoo_torch.TorchZooModel` with the same weights (read from
    the ONNX file); without PyTorch that raises ``LanesError("missing_dependency")``. Another
    backend raises ``LanesError("bad_argument")``. ``cuda_graphs`` (torch only) replays each
    batch shape's network as a CUDA graph on ``cuda:N`` replicas; with ``onnx`` it raises
    ``LanesError("bad_argument")``.
    """
    s = spec(name)
    if backend not in BACKENDS:
        raise LanesError(
            BAD_ARGUMENT, f"zoo backend '{backend}': unknown; allowed are " + ", ".join(BACKENDS)
        )
    outputs: tuple[TensorSpec, ...]
    if s.task == "char":
        outputs = (
            TensorSpec("label", "BYTES", (-1,)),
            TensorSpec("class", "INT64", (-1,)),
            TensorSpec("score", "FP32", (-1,)),
        )
    else:
        outputs = (TensorSpec("text", "BYTES", (-1,)),)
    if cuda_graphs and backend != "torch":
        raise LanesError(
            BAD_ARGUMENT, f"zoo backend '{backend}': CUDA graphs need the torch backend"
        )
    cls: type[ZooModel] = OnnxZooModel
    platform = "onnxruntime_onnx"
    extra: dict[str, Any] = {}
    if backend == "torch":
        from lanes.models.zoo_torch import TorchZooModel

        cls, platform = TorchZooModel, "pytorch_libtorch"
        extra["cuda_graphs"] = cuda_graphs
    return cls(
        name=name,
        inputs=(TensorSpec(INPUT, "BYTES", (-1,)),),
        input_forms=tuple(
            (TensorSpec(INPUT, dtype, shape),)
            for dtype in ("UINT8", "FP32")
            for shape in ((-1, -1, -1), (-1, 1, -1, -1))
        ),
        outputs=outputs,
        batching=s.batching,
        version="1",
        platform=platform,
        timeout_ms=s.timeout_ms,
        devices=("cpu", "cuda", "sim"),
        cost=s.cost,
        path=onnx_path(name, cache_dir),
        task=s.task,
        labels=s.labels,
        **extra,
    )


def zoo_models(
    names: Sequence[str] | None = None,
    cache_dir: Path | None = None,
    backend: str = "onnx",
    cuda_graphs: bool = False,
) -> list[Model]:
    """The zoo models ``names`` (all of :data:`ZOO_NAMES` by default), in that order, their ONNX
    files generated under ``cache_dir`` as needed; not loaded (the server calls
    ``replica(device)``). ``backend`` is ``onnx`` (the default) or ``torch``, ``cuda_graphs``
    torch's graphs on CUDA: see :func:`zoo_model`."""
    return [
        zoo_model(n, cache_dir, backend, cuda_graphs)
        for n in (ZOO_NAMES if names is None else names)
    ]


# -- export -------------------------------------------------------------------------------------


def model_toml(name: str) -> str:
    """The ``model.toml`` of zoo model ``name``'s raw ONNX model (``x`` → ``logits``, served by
    the generic ``onnx`` adapter)."""
    s = spec(name)
    b = s.batching

    def tensor(table: str, tname: str, shape: Sequence[int]) -> str:
        dims = ", ".join(str(d) for d in shape)
        return f'[[{table}]]\nname = "{tname}"\ndatatype = "FP32"\nshape = [{dims}]\n'

    return (
        f'name = "{name}"\n'
        'adapter = "onnx"\n'
        'file = "model.onnx"\n'
        'version = "1"\n'
        'devices = ["cpu", "cuda", "sim"]\n'
        f"timeout_ms = {s.timeout_ms:g}\n"
        "\n[batching]\n"
        f"max_batch_size = {b.max_batch_size}\n"
        f"batch_timeout_micros = {b.batch_timeout_micros}\n"
        f"num_batch_threads = {b.num_batch_threads}\n"
        f"max_enqueued_batches = {b.max_enqueued_batches}\n"
        "\n[cost]\n"
        f"fixed_ms = {s.cost.fixed_ms!r}\n"
        f"per_item_ms = {s.cost.per_item_ms!r}\n"
        "\n" + tensor("inputs", "x", (-1, *s.input_shape)) + "\n"
        "" + tensor("outputs", "logits", (-1, *s.output_shape))
    )


def export(
    directory: Path, names: Sequence[str] | None = None, cache_dir: Path | None = None
) -> list[Path]:
    """Write zoo models as a model repository: ``<directory>/<name>/model.onnx`` and
    ``model.toml`` for each of ``names`` (all by default); returns the model folders.

    Every file is written atomically; the ONNX bytes come from the cache (``cache_dir``, see
    :func:`onnx_path`).
    """
    from lanes.files import write_text_atomic

    folders = []
    for name in ZOO_NAMES if names is None else names:
        source = onnx_path(name, cache_dir)
        folder = directory / name
        _mkdir(folder)
        _write_bytes(folder / "model.onnx", source.read_bytes())
        write_text_atomic(folder / "model.toml", model_toml(name))
        folders.append(folder)
    return folders


__all__ = [
    "BACKENDS",
    "IR_VERSION",
    "OPSET",
    "ZOO_NAMES",
    "ZOO_VERSION",
    "OnnxZooModel",
    "ZooModel",
    "ZooSpec",
    "default_cache_dir",
    "export",
    "generate",
    "model_proto",
    "model_toml",
    "onnx_path",
    "onnx_session",
    "spec",
    "wire_images",
    "zoo_model",
    "zoo_models",
]
