"""The model repository of the serving race, and the bare model's own latency.

Three models, one folder each (``model.onnx`` + lanes' ``model.toml``), served by every
server from the same files:

- ``char_cnn`` — the demo zoo's raw CNN (``lanes zoo export``: ``x`` FP32 ``[n, 1, 32, 32]``
  → ``logits`` FP32 ``[n, 3755]``), the real workload with a large output (3,755 floats of
  JSON per request).
- ``char_cnn_top1`` — the same graph ending in ``ArgMax``: ``class`` INT64 ``[n]``, the small
  output a user of a classifier receives (a label, not its logits).
- ``identity`` — one ONNX ``Identity`` node, ``x`` FP32 ``[n, 16]`` → ``y``, built here with
  the ``onnx`` package: the model costs nothing, so its latency is pure serving overhead.

Both batch up to :data:`MAX_BATCH_SIZE` rows with a batch timeout of :data:`BATCH_TIMEOUT_US`
(lanes' eager default); the peers are started with the same two numbers.

:func:`bare_latency` times the model alone, in process, with ONNX Runtime at batch 1 and the
thread count each server gives one worker: the floor that "added latency" is measured over.
"""

from __future__ import annotations

import re
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAX_BATCH_SIZE = 16
BATCH_TIMEOUT_US = 0
IDENTITY_WIDTH = 16
OPSET = 17
IR_VERSION = 8


@dataclass(frozen=True)
class ModelInfo:
    """What a server and a client need to know of one benchmark model."""

    name: str
    input_name: str
    output_name: str
    item_shape: tuple[int, ...]


MODELS = {
    "char_cnn": ModelInfo("char_cnn", "x", "logits", (1, 32, 32)),
    "char_cnn_top1": ModelInfo("char_cnn_top1", "x", "class", (1, 32, 32)),
    "identity": ModelInfo("identity", "x", "y", (IDENTITY_WIDTH,)),
}


def identity_toml() -> str:
    """lanes' ``model.toml`` of the identity model (same batching as ``char_cnn``)."""
    return (
        'name = "identity"\nadapter = "onnx"\nfile = "model.onnx"\nversion = "1"\n'
        'devices = ["cpu"]\n\n[batching]\n'
        f"max_batch_size = {MAX_BATCH_SIZE}\nbatch_timeout_micros = {BATCH_TIMEOUT_US}\n"
        "num_batch_threads = 1\nmax_enqueued_batches = 64\n\n"
        "[cost]\nfixed_ms = 0.01\nper_item_ms = 0.0\n\n"
        f'[[inputs]]\nname = "x"\ndatatype = "FP32"\nshape = [-1, {IDENTITY_WIDTH}]\n\n'
        f'[[outputs]]\nname = "y"\ndatatype = "FP32"\nshape = [-1, {IDENTITY_WIDTH}]\n'
    )


def write_identity(folder: Path) -> Path:
    """Write the identity model (``model.onnx``, ``model.toml``) into ``folder``."""
    import onnx
    from onnx import TensorProto, helper

    folder.mkdir(parents=True, exist_ok=True)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", IDENTITY_WIDTH])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", IDENTITY_WIDTH])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "identity", [x], [y])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION
    )
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / "model.onnx"))
    (folder / "model.toml").write_text(identity_toml())
    return folder


def write_top1(char_cnn: Path, folder: Path) -> Path:
    """``char_cnn_top1`` from ``char_cnn``'s folder: its graph with ``ArgMax`` (axis 1) on the
    logits as the one output ``class``, and its ``model.toml`` saying so."""
    import onnx
    from onnx import TensorProto, helper

    folder.mkdir(parents=True, exist_ok=True)
    model = onnx.load(str(char_cnn / "model.onnx"))
    graph = model.graph
    graph.node.append(helper.make_node("ArgMax", ["logits"], ["class"], axis=1, keepdims=0))
    del graph.output[:]
    graph.output.append(helper.make_tensor_value_info("class", TensorProto.INT64, ["n"]))
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / "model.onnx"))
    toml = (char_cnn / "model.toml").read_text()
    toml = re.sub(r"(?m)^name = .*$", 'name = "char_cnn_top1"', toml, count=1)
    head, _, _ = toml.partition("[[outputs]]")
    toml = head + '[[outputs]]\nname = "class"\ndatatype = "INT64"\nshape = [-1]\n'
    (folder / "model.toml").write_text(toml)
    return folder


def write_repository(directory: Path) -> Path:
    """The benchmark's model repository: ``char_cnn`` from the zoo, ``char_cnn_top1`` and
    ``identity`` built here."""
    from lanes.models import zoo

    zoo.export(directory, ["char_cnn"])
    write_top1(directory / "char_cnn", directory / "char_cnn_top1")
    write_identity(directory / "identity")
    return directory


def sample(info: ModelInfo, rows: int = 1, seed: int = 0) -> np.ndarray:
    """A fixed FP32 input of ``rows`` items in [0, 1) (3-decimal values: short JSON)."""
    rng = np.random.default_rng(seed)
    return np.round(rng.random((rows, *info.item_shape)), 3).astype(np.float32)


@dataclass(frozen=True)
class Bare:
    """The model alone: ONNX Runtime ``run`` at batch 1, in microseconds."""

    p50_us: float
    p99_us: float
    runs: int
    threads: int


def bare_latency(model_file: Path, info: ModelInfo, threads: int, runs: int = 2000) -> Bare:
    """Time ``runs`` batch-1 calls of the model (after 50 warm-up calls), p50 and p99."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
    feed = {info.input_name: sample(info)}
    for _ in range(50):
        session.run(None, feed)
    times = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        session.run(None, feed)
        times.append((time.perf_counter_ns() - start) / 1000)
    q = statistics.quantiles(times, n=100)
    return Bare(p50_us=statistics.median(times), p99_us=q[98], runs=runs, threads=threads)
