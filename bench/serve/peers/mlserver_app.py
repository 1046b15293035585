"""One benchmark model served by MLServer, at its documented settings for a small CPU host.

    .venv-mlserver/bin/python mlserver_app.py --model-dir DIR --name char_cnn --port 8600
        [--grpc-port 8601] [--max-batch-size 16] [--batch-timeout-us 1000] [--workers 2]
        [--threads 1] [--work DIR]

MLServer (1.7, Seldon) speaks KServe v2 / Open Inference Protocol over REST and gRPC itself, so
it receives the race's request bytes unchanged; the model is a custom inference runtime
(:class:`OnnxRuntime`, an ``MLModel`` subclass) that runs the ONNX graph with ONNX Runtime in
``predict``, the way an MLServer user serves a model it has no built-in runtime for.

Settings (MLServer docs: "Parallel Inference", "Adaptive Batching", "MLServer Settings",
"Model Settings"; Seldon Core 2's "Performance tuning / Inference": "adjust parallel_workers
in line with the number of CPU cores"):

- ``parallel_workers = --workers`` inference processes (one per core here), besides the main
  process that parses REST and gRPC and batches;
- adaptive batching: ``max_batch_size = --max-batch-size`` and ``max_batch_time`` from
  ``--batch-timeout-us``. MLServer enables batching only when ``max_batch_time > 0``
  (``mlserver/batching/hooks.py``, ``load_batching``), so the race's eager timeout 0 is not
  available: the kit uses 1 ms, as for LitServe;
- ``debug = false`` (no access log), metrics off (``metrics_endpoint = null``; lanes runs
  with ``--metrics-port off``), listening on 127.0.0.1;
- ONNX Runtime with ``--threads`` intra-op threads, one inter-op thread, no spinning
  (``OMP_NUM_THREADS`` set to match).

The launcher writes ``settings.json`` and ``NAME/model-settings.json`` into ``--work`` (a
fresh temporary folder by default) and replaces itself with ``mlserver start``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from mlserver import MLModel  # type: ignore[import-not-found,unused-ignore]
from mlserver.codecs import NumpyCodec  # type: ignore[import-not-found,unused-ignore]
from mlserver.codecs.numpy import to_datatype  # type: ignore[import-not-found,unused-ignore]
from mlserver.types import (  # type: ignore[import-not-found,unused-ignore]
    InferenceRequest,
    InferenceResponse,
    ResponseOutput,
)

HERE = Path(__file__).resolve().parent


class OnnxRuntime(MLModel):  # type: ignore[misc,unused-ignore]
    """A custom MLServer runtime: one ONNX Runtime session per inference worker; ``predict``
    runs the (adaptively batched) request's one input through the graph and answers its one
    output with the graph's own shape (``[n, 16]``, ``[n, 3755]`` or ``[n]``)."""

    async def load(self) -> bool:
        import onnxruntime as ort

        params = self.settings.parameters
        extra: dict[str, Any] = dict(params.extra or {})
        options = ort.SessionOptions()
        options.intra_op_num_threads = int(extra.get("threads", 1))
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(
            str(params.uri), options, providers=["CPUExecutionProvider"]
        )
        self.input_name = self.session.get_inputs()[0].name
        self.output_name = self.session.get_outputs()[0].name
        return True

    def run(self, x: np.ndarray) -> np.ndarray:
        """The graph on one batch: what :meth:`predict` answers, without the wire types."""
        (y,) = self.session.run([self.output_name], {self.input_name: x})
        return np.asarray(y)

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        x = NumpyCodec.decode_input(payload.inputs[0]).astype(np.float32, copy=False)
        y = self.run(x)
        output = ResponseOutput(
            name=self.output_name,
            shape=list(y.shape),
            datatype=to_datatype(y.dtype),
            data=y.ravel().tolist(),
        )
        return InferenceResponse(model_name=self.name, outputs=[output])


def write_settings(args: argparse.Namespace, work: Path) -> Path:
    """``settings.json`` and ``NAME/model-settings.json`` for one model in ``work``."""
    server = {
        "debug": False,
        "parallel_workers": args.workers,
        "host": "127.0.0.1",
        "http_port": args.port,
        "grpc_port": args.grpc_port,
        "metrics_endpoint": None,
        "load_models_at_startup": True,
    }
    model = {
        "name": args.name,
        "implementation": "mlserver_app.OnnxRuntime",
        "max_batch_size": args.max_batch_size,
        "max_batch_time": args.batch_timeout_us / 1e6,
        "parameters": {
            "uri": str((args.model_dir / args.name / "model.onnx").resolve()),
            "extra": {"threads": args.threads},
        },
    }
    (work / args.name).mkdir(parents=True, exist_ok=True)
    (work / "settings.json").write_text(json.dumps(server, indent=1) + "\n")
    (work / args.name / "model-settings.json").write_text(json.dumps(model, indent=1) + "\n")
    return work


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-dir", type=Path, required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--grpc-port", type=int, default=0, help="default: --port + 1")
    parser.add_argument("--max-batch-size", type=int, default=16)
    parser.add_argument("--batch-timeout-us", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    if args.batch_timeout_us <= 0:
        parser.error("--batch-timeout-us: MLServer batches only with max_batch_time > 0")
    args.grpc_port = args.grpc_port or args.port + 1
    work = args.work or Path(tempfile.mkdtemp(prefix="mlserver-race-"))
    work = write_settings(args, work.resolve())
    os.chdir(work)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(HERE), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    mlserver = shutil.which("mlserver", path=str(Path(sys.executable).parent))
    if mlserver is None:
        sys.exit(f"mlserver is not installed beside {sys.executable}")
    os.execv(mlserver, [mlserver, "start", str(work)])


if __name__ == "__main__":
    main()
