"""``lanes bench corpus``: build a load-test corpus of KServe v2 infer requests.

Reached as ``lanes bench corpus ...`` (the top-level parser routes it here). One request per
image (``.png``/``.jpg``: a BYTES tensor holding the file) or NumPy array (``.npy``: a typed
tensor) in ``--images DIR``, in name order, written as JSONL for ``lanes bench --corpus``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

PROG = "lanes bench corpus"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "bench-corpus",
        prog=PROG,
        description="Build a corpus of KServe v2 infer requests (binary tensor extension by "
        "default, or plain JSON) from a folder of images or .npy arrays, for "
        "`lanes bench URL --corpus FILE`.",
    )
    p.add_argument("--kserve", required=True, metavar="MODEL", help="the model to address")
    p.add_argument(
        "--images",
        required=True,
        type=Path,
        metavar="DIR",
        help="folder of .png/.jpg images and/or .npy arrays, one request each",
    )
    p.add_argument("-o", "--output", required=True, type=Path, metavar="FILE", help="JSONL file")
    p.add_argument("--input-name", default="INPUT", help="input tensor name (default INPUT)")
    p.add_argument(
        "--outputs", default="", metavar="A,B", help="output tensors to ask for (default: all)"
    )
    p.add_argument("--binary-output", action="store_true", help="ask for outputs as binary data")
    p.add_argument("--version", dest="model_version", help="address this model version")
    p.add_argument(
        "--json",
        action="store_true",
        help="plain JSON tensors instead of the binary extension (arrays only)",
    )
    p.add_argument(
        "--no-batch-dim",
        action="store_true",
        help="send an array's shape as is (default: prepend a batch dimension of 1)",
    )
    p.set_defaults(handler=handle, display=PROG)


def handle(args: argparse.Namespace) -> int:
    from lanes.bench.corpus import kserve_requests, write_corpus
    from lanes.files import check_writable

    check_writable(args.output, "--output")
    entries = kserve_requests(
        args.kserve,
        args.images,
        binary=not args.json,
        input_name=args.input_name,
        output_names=[o for o in args.outputs.split(",") if o],
        version=args.model_version,
        batch_dim=not args.no_batch_dim,
        binary_output=args.binary_output,
    )
    n = write_corpus(entries, args.output)
    print(f"wrote {n} requests for model {args.kserve} to {args.output}")
    return 0
