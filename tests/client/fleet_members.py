"""Real ``lanes serve`` members for the client tests: a python-adapter model ``double`` (``y = 2x``
over FP32 ``[-1, 2]``) on one simulated GPU, whose device time is the model's ``[cost]``."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from serve_process import ServeProcess, model_toml, start, write_model

MODEL_PY = """\
def predict(batch):
    return {"y": batch["x"] * 2}
"""


def launch(
    tmp_path: Path, name: str, *, cost_ms: float, max_batch: int, port: int = 0
) -> ServeProcess:
    """``lanes serve`` on ``sim:1`` holding ``double``; ``port`` 0: any free port."""
    repo = tmp_path / f"repo-{name}"
    if not repo.exists():
        write_model(repo, "double", MODEL_PY, model_toml(max_batch, cost_ms=cost_ms))
    args = ["--models", str(repo), "--devices", "sim:1", "--port", str(port)]
    args += ["--metrics-port", "off", "--policy", "fifo", "--warmup-batches", "0"]
    return start(args, tmp_path / f"serve-{name}-{time.monotonic_ns()}.log")


def stats(p: ServeProcess) -> dict[str, Any]:
    with urllib.request.urlopen(f"{p.url}/v2/models/double/stats", timeout=10) as r:
        stats: dict[str, Any] = json.loads(r.read())["model_stats"][0]
    return stats


def batch_sizes(p: ServeProcess) -> dict[int, int]:
    """Batches the member ran, by rows."""
    return {b["batch_size"]: b["compute_infer"]["count"] for b in stats(p)["batch_stats"]}


def wait_until(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    """Poll ``condition`` (state is read, never guessed by sleeping)."""
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "condition not met in time"
        time.sleep(0.01)
