"""One benchmark model served by LitServe, at its documented settings for a small CPU host.

    .venv/bin/python litserve_app.py --model-dir DIR --name char_cnn --port 8100
        [--max-batch-size 16] [--batch-timeout-us 0] [--workers 2] [--threads 1]

Settings (LitServe 0.2 docs, ``LitAPI`` / ``LitServer`` / ``LitServer.run``): dynamic batching
in the ``LitAPI`` (``max_batch_size``, ``batch_timeout`` in seconds), ``accelerator="cpu"``
with ``workers_per_device`` worker processes ("for CPU, set to the number of cores"),
``fast_queue=True`` (ZeroMQ, "for > 100 RPS"), one API server process per worker (the
default), access logs off. Each worker runs ONNX Runtime with ``--threads`` intra-op threads
and one inter-op thread. The route is ``/v2/models/NAME/infer`` and the body is KServe v2 JSON
(:mod:`kserve_json`), byte-identical to what lanes receives; batching uses LitAPI's default
``batch`` (``numpy.stack`` of the decoded items) and ``unbatch`` (the rows).
"""

import argparse
import sys
from pathlib import Path
from typing import Any

import litserve as ls  # type: ignore[import-not-found,unused-ignore]
import numpy as np
from fastapi import Request  # type: ignore[import-not-found,unused-ignore]

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kserve_json

from models import MODELS


class OnnxAPI(ls.LitAPI):  # type: ignore[misc,unused-ignore]
    """Decode a KServe v2 JSON tensor, run the ONNX model on the batch, encode each row."""

    def __init__(self, model_dir: Path, name: str, threads: int, **kwargs: Any) -> None:
        super().__init__(api_path=f"/v2/models/{name}/infer", **kwargs)
        self.model_file = model_dir / name / "model.onnx"
        self.info = MODELS[name]
        self.threads = threads

    def setup(self, device: str) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(
            str(self.model_file), options, providers=["CPUExecutionProvider"]
        )

    # LitServe builds the route from these annotations (no ``from __future__ import
    # annotations`` here): a ``Request`` argument and no return annotation on
    # ``encode_response`` are its defaults, which read the body with ``request.json()``
    # and return the dict as JSON without a response model. LitServe hands decode_request
    # the parsed JSON body, not the Request.
    def decode_request(self, request: Request) -> kserve_json.FloatArray:
        body: Any = request
        item: kserve_json.FloatArray = kserve_json.decode(body, self.info.input_name)[0]
        return item

    def predict(self, x: np.ndarray) -> np.ndarray:
        outputs = self.session.run(None, {self.info.input_name: x})
        return np.asarray(outputs[0])

    def encode_response(self, output: np.ndarray):  # type: ignore[no-untyped-def]  # noqa: ANN201
        return kserve_json.encode(self.info.name, self.info.output_name, output[np.newaxis])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-dir", type=Path, required=True)
    parser.add_argument("--name", choices=sorted(MODELS), required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--max-batch-size", type=int, default=16)
    parser.add_argument("--batch-timeout-us", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    api = OnnxAPI(
        args.model_dir,
        args.name,
        args.threads,
        max_batch_size=args.max_batch_size,
        batch_timeout=args.batch_timeout_us / 1e6,
    )
    server = ls.LitServer(
        api, accelerator="cpu", devices=1, workers_per_device=args.workers, fast_queue=True
    )
    server.run(host="127.0.0.1", port=args.port, log_level="warning", generate_client_file=False)


if __name__ == "__main__":
    main()
