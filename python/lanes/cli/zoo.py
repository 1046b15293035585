"""``lanes zoo``: the built-in demo model zoo.

``lanes zoo list`` prints the models; ``lanes zoo export DIR`` writes them as a model repository
(``model.toml`` + ``model.onnx`` per model, served raw by the onnx adapter: tensors ``x`` →
``logits``); ``lanes zoo images DIR`` writes a small deterministic set of PNG images for load
tests (``DIR/char`` for char_cnn and misc_cls, ``DIR/line`` for the line models). The models are
generated in code with fixed seeds and cached on first use; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from lanes.errors import BAD_ARGUMENT, OUTPUT_FAILED, LanesError


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "zoo",
        help="the built-in demo model zoo: list, export as a repository, sample images",
        description="The built-in demo zoo: char_cnn, line_rnn_zh, line_rnn_en, misc_cls "
        "(ONNX, generated in code, cached).",
    )
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    sub.add_parser("list", help="list the zoo's models and their batching settings")
    export = sub.add_parser("export", help="write the zoo as a model repository")
    export.add_argument("directory", type=Path, metavar="DIR")
    export.add_argument("--models", metavar="A,B", help="only these models (default: all)")
    images = sub.add_parser("images", help="write sample PNG images for load tests")
    images.add_argument("directory", type=Path, metavar="DIR")
    images.add_argument("--count", type=int, default=8, help="images of each kind (default 8)")
    images.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.set_defaults(handler=run)


def _names(text: str | None) -> list[str] | None:
    from lanes.models.zoo import ZOO_NAMES

    if text is None:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in ZOO_NAMES]
    if unknown or not names:
        raise LanesError(
            BAD_ARGUMENT, f"--models {text!r}: unknown model; allowed: {', '.join(ZOO_NAMES)}"
        )
    return names


def run(args: argparse.Namespace) -> int:
    from lanes.models import zoo

    if args.action == "list":
        for m in zoo.zoo_models():
            b = m.batching
            print(
                f"{m.name:12} inputs {[t.name for t in m.inputs]} → "
                f"outputs {[t.name for t in m.outputs]} · max_batch_size {b.max_batch_size} · "
                f"cost ~{m.cost.fixed_ms:g} + {m.cost.per_item_ms:g}/item ms (CPU)"
            )
        return 0
    try:
        args.directory.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise LanesError(OUTPUT_FAILED, f"{args.directory}: {err.strerror}") from None
    if args.action == "export":
        folders = zoo.export(args.directory, _names(args.models))
        for f in folders:
            print(f)
        print(
            f"lanes zoo: wrote {len(folders)} models; serve them with "
            f"`lanes serve --models {args.directory}`",
            file=sys.stderr,
        )
        return 0
    if not 1 <= args.count <= 10_000:
        raise LanesError(BAD_ARGUMENT, f"--count {args.count}: must be 1..10000")
    from lanes.models.images import sample_images

    paths = sample_images(args.directory, args.count, args.seed)
    print(f"lanes zoo: wrote {len(paths)} images under {args.directory}", file=sys.stderr)
    return 0
