"""One benchmark model served by Ray Serve, at its documented settings for a small CPU host.

    .venv/bin/python ray_app.py --model-dir DIR --name char_cnn --port 8200
        [--max-batch-size 16] [--batch-timeout-us 0] [--workers 2] [--threads 1]

Settings (Ray Serve docs: "Dynamic Request Batching", "Configure Ray Serve deployments",
"Performance Tuning"): a local Ray of ``--workers`` CPUs without the dashboard; one deployment
with ``num_replicas = --workers`` replicas of one CPU each; ``@serve.batch(max_batch_size,
batch_wait_timeout_s)`` on the model call; ``max_ongoing_requests`` at twice the batch size
(the docs: at least ``max_batch_size``, or batches never fill); ONNX Runtime with
``--threads`` intra-op threads per replica and one inter-op thread (``OMP_NUM_THREADS`` set to
match). Ingress is Serve's HTTP proxy on 127.0.0.1:``--port``; the route is
``/v2/models/NAME/infer`` and the body KServe v2 JSON (:mod:`kserve_json`). The process runs
until SIGTERM or SIGINT, then shuts Serve and Ray down.
"""

import argparse
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
from starlette.requests import Request  # type: ignore[import-not-found,unused-ignore]

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kserve_json

from models import MODELS


class OnnxModel:
    """A replica: one ONNX Runtime session; requests are batched by ``@serve.batch``."""

    def __init__(self, model_file: str, name: str, threads: int) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(model_file, options, providers=["CPUExecutionProvider"])
        self.info = MODELS[name]

    async def infer(self, items: list[np.ndarray]) -> list[np.ndarray]:
        outputs = self.session.run(None, {self.info.input_name: np.concatenate(items)})
        return list(np.split(np.asarray(outputs[0]), len(items)))

    async def __call__(self, request: Request) -> dict[str, Any]:
        x = kserve_json.decode(await request.json(), self.info.input_name)
        y = await self.infer(x)  # type: ignore[arg-type]  # @serve.batch takes one item
        return kserve_json.encode(self.info.name, self.info.output_name, y)  # type: ignore[arg-type]


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
    os.environ["OMP_NUM_THREADS"] = str(args.threads)

    import ray  # type: ignore[import-not-found,unused-ignore]
    from ray import serve  # type: ignore[import-not-found,unused-ignore]

    batched = serve.batch(
        max_batch_size=args.max_batch_size, batch_wait_timeout_s=args.batch_timeout_us / 1e6
    )(OnnxModel.infer)
    model_cls = type("OnnxModel", (OnnxModel,), {"infer": batched})
    deployment = serve.deployment(
        name=args.name,
        num_replicas=args.workers,
        max_ongoing_requests=2 * args.max_batch_size,
        ray_actor_options={
            "num_cpus": 1,
            "runtime_env": {"env_vars": {"OMP_NUM_THREADS": str(args.threads)}},
        },
    )(model_cls)

    ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
    serve.start(http_options={"host": "127.0.0.1", "port": args.port})
    model_file = str(args.model_dir.resolve() / args.name / "model.onnx")
    serve.run(
        deployment.bind(model_file, args.name, args.threads),
        name=args.name,
        route_prefix=f"/v2/models/{args.name}",
    )
    print(f"ray serve: http://127.0.0.1:{args.port}/v2/models/{args.name}/infer", flush=True)

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    serve.shutdown()
    ray.shutdown()


if __name__ == "__main__":
    main()
