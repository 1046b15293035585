"""``bench/gpu/check.sh lab``: a real (tiny) lab on simulated devices, archived by the name its
``LAB_OUT`` folder has (GPU run 6 lost a lab whose folder was not named ``gpu-lab``)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

TINY = """
name = "tiny"
[[variant]]
name = "sjf"
command = ["lanes", "serve", "--devices", "sim:2", "--policy", "sjf", "--port", "{port}",
           "--metrics-port", "{metrics_port}", "--warmup-batches", "0", "--workers", "1",
           "--grpc-port", "off"]
[workload]
mix = [{model = "char_cnn", weight = 1}]
levels = [40]
warmup_s = 0.3
measure_s = 1.0
repeats = 1
slo_ms = 200
generators = 1
connections = 4
[stability]
max_extensions = 0
"""


def test_the_lab_is_archived_under_its_own_folder_name(tmp_path: Path) -> None:
    experiment = tmp_path / "tiny.toml"
    experiment.write_text(TINY)
    out = tmp_path / "out"
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "LAB_OUT": str(tmp_path / "knee"),
        "LAB_EXPERIMENT": str(experiment),
        "LAB_TIMEOUT": "120",
    }
    done = subprocess.run(
        ["bash", "bench/gpu/check.sh", "lab", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert "lab rc 0" in (out / "lab.txt").read_text()
    assert (out / "summary.json").is_file()
    with tarfile.open(out / "gpu-lab.tgz") as archive:
        names = archive.getnames()
    assert "knee/summary.json" in names
    assert "knee/runs/sjf/L0-r1.json" in names


def test_an_unknown_mode_is_refused_with_its_usage(tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", "bench/gpu/check.sh", "labs", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "usage: check.sh smoke|lab|kernel OUT" in done.stderr
