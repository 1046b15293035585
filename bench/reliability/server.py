"""What the reliability scripts share: a one-model ONNX repository, ``lanes serve`` as a
subprocess (its URLs read from the start-up line), its resident memory and open files, and
percentiles.

The model is the test suite's ``affine`` (``y = relu(x @ W + b)``, FP32 ``[N, 4]`` → ``[N, 3]``,
and ``k = argmax(y)``; tests/serving/onnx_repository.py): its compute is
negligible, so on a simulated device (``sim:N``) the device's modelled time, not this host's
two cores, sets the capacity — as a GPU does on a GPU host.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.serving.onnx_repository import write_onnx_repository

BIN = Path(sys.executable).parent
REQUEST = (
    b'{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}'
)  # fmt: skip
INFER = "/v2/models/affine/infer"


@dataclass(frozen=True)
class ModelKnobs:
    """The batching knobs and the simulated device's cost curve of ``affine``."""

    max_batch_size: int = 16
    max_enqueued_batches: int = 4
    fixed_ms: float = 10.0
    per_item_ms: float = 1.0


def write_repository(root: Path, knobs: ModelKnobs) -> Path:
    """``root/affine/{model.onnx,model.toml}`` (the test suite's ``affine`` graph, these knobs);
    returns ``root``."""
    onnx_file = write_onnx_repository(root)
    onnx_file.with_name("model.toml").write_text(
        'adapter = "onnx"\nfile = "model.onnx"\n'
        f"[batching]\nmax_batch_size = {knobs.max_batch_size}\nbatch_timeout_micros = 0\n"
        f"max_enqueued_batches = {knobs.max_enqueued_batches}\n"
        f"[cost]\nfixed_ms = {knobs.fixed_ms}\nper_item_ms = {knobs.per_item_ms}\n"
        '[[inputs]]\nname = "x"\ndatatype = "FP32"\nshape = [-1, 4]\n'
        '[[outputs]]\nname = "y"\ndatatype = "FP32"\nshape = [-1, 3]\n'
        '[[outputs]]\nname = "k"\ndatatype = "INT64"\nshape = [-1]\n'
    )
    return root


class Server:
    """``lanes serve ARGS`` in a subprocess; stderr is kept in ``log``."""

    def __init__(self, args: list[str], log: Path, start_s: float = 60.0) -> None:
        self.command = [str(BIN / "lanes"), "serve", *args]
        self._log = log.open("w")
        self.proc = subprocess.Popen(
            self.command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stderr is not None
        end = time.monotonic() + start_s
        self.line = ""
        for line in self.proc.stderr:
            self._log.write(line)
            if line.startswith("lanes serve: http://"):
                self.line = line.strip()
                break
            if time.monotonic() > end:
                break
        if not self.line:
            self.stop()
            raise SystemExit(f"lanes serve did not start; see {log}")
        self.url = self.line.split()[2]
        grpc = re.search(r"grpc :(\d+)", self.line)
        self.grpc_port = int(grpc.group(1)) if grpc else None
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._log.write(line)
        self._log.flush()

    def rss_bytes(self) -> int:
        """Resident memory (VmRSS), 0 once the process is gone."""
        try:
            status = Path(f"/proc/{self.proc.pid}/status").read_text()
        except OSError:
            return 0
        match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
        return int(match.group(1)) * 1024 if match else 0

    def open_files(self) -> int:
        try:
            return len(list(Path(f"/proc/{self.proc.pid}/fd").iterdir()))
        except OSError:
            return 0

    def nofile_limit(self) -> str:
        limits = Path(f"/proc/{self.proc.pid}/limits").read_text()
        line = next(x for x in limits.splitlines() if x.startswith("Max open files"))
        return " ".join(line.split()[3:5])

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> int | None:
        """SIGTERM, then kill after 30 s; the exit status."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        return self.proc.returncode


def percentiles(values: list[float]) -> dict[str, float | None]:
    """p50/p90/p99/max of ``values`` (ms), rounded to 0.01 ms; None when empty."""
    if not values:
        return {"n": 0, "p50": None, "p90": None, "p99": None, "max": None}
    q = np.percentile(np.asarray(values), [50, 90, 99, 100])
    return {
        "n": len(values),
        "p50": round(float(q[0]), 2),
        "p90": round(float(q[1]), 2),
        "p99": round(float(q[2]), 2),
        "max": round(float(q[3]), 2),
    }
