"""The demo zoo served three ways by ``lanes serve``, for the lab to set side by side
(``bench/zoo_paths/paths.toml``; figures in docs/results/gpu.md).

- ``native``: the zoo as ``lanes serve --demo`` runs it on CPU devices — decode, resize, the
  ONNX graph, softmax/CTC all in Rust, no Python per request or per batch.
- ``rust-hooks``: the network in Python, called once per batch (ONNX Runtime's Python API here;
  PyTorch on ``cuda:N`` with ``--zoo-backend torch``), the zoo's pre- and post-processing in Rust
  around it — how ``lanes serve`` runs the zoo on a GPU host without ``onnxruntime-gpu``.
- ``python-hooks``: the same network, with pre- and post-processing in Python per request on the
  hook pool (a model that overrides them), as ``lanes serve`` ran the GPU zoo before.

The three share the zoo's weights, the server, the devices and the policy; only where the
per-request and per-batch work runs differs. ``--batch-threads N`` sets every model's
``num_batch_threads`` (batches of one model in flight at once; the zoo's is 1), for the
isolation experiment (examples/experiments/ocr-isolation.toml). Usage (as a lab variant's
command)::

    python bench/zoo_paths/serve.py --path rust-hooks --port 8000 --metrics-port 8002 \\
        --devices cpu:2 --policy sjf
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from lanes.models.base import Arrays
from lanes.models.zoo import OnnxZooModel, ZooModel, zoo_models
from lanes.serving import ServeConfig, serve

PATHS = ("native", "rust-hooks", "python-hooks")


class PythonNetwork(OnnxZooModel):
    """The zoo's network called from Python once per batch; its hooks the zoo's own."""

    def predict(self, batch: Arrays) -> Arrays:
        return super().predict(batch)


class PythonHooks(PythonNetwork):
    """The same, with the zoo's pre- and post-processing run in Python per request."""

    def preprocess(self, inputs: Arrays) -> Arrays:
        return super().preprocess(inputs)

    def postprocess(self, output: Arrays) -> Arrays:
        return super().postprocess(output)


def models(path: str, batch_threads: int | None = None) -> list[ZooModel]:
    """The demo zoo for ``path`` (one of :data:`PATHS`), with ``batch_threads`` batches of each
    model in flight at once when given."""
    zoo = [m for m in zoo_models() if isinstance(m, ZooModel)]
    if batch_threads is not None:
        for m in zoo:
            m.batching = dataclasses.replace(m.batching, num_batch_threads=batch_threads)
    if path == "native":
        return zoo
    cls = PythonNetwork if path == "rust-hooks" else PythonHooks
    return [
        cls(**{f.name: getattr(m, f.name) for f in dataclasses.fields(m) if f.init}) for m in zoo
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--path", choices=PATHS, required=True)
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--metrics-port", type=int, default=8002)
    p.add_argument("--devices", default="cpu:2")
    p.add_argument("--cpu-threads", type=int, default=1)
    p.add_argument("--policy", default="sjf")
    p.add_argument("--batch-threads", type=int, default=None, metavar="N")
    args = p.parse_args(argv)
    config = ServeConfig(
        port=args.port,
        metrics_port=args.metrics_port,
        grpc_port="off",
        devices=args.devices,
        cpu_threads=args.cpu_threads,
        policy=args.policy,
    )
    serve(config, models(args.path, args.batch_threads))
    return 0


if __name__ == "__main__":
    sys.exit(main())
