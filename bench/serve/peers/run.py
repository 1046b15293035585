#!/usr/bin/env python3
"""The serving race: lanes against LitServe, Ray Serve and MLServer on the same ONNX models
(issue 5 §4, issue 14).

    .venv/bin/python bench/serve/peers/run.py [all|setup|race|crosscheck|profile|cpu|grpc]
        [--quick] [--repeats N] [--servers lanes,mlserver,litserve,ray]
        [--models identity,char_cnn_top1,char_cnn] [--out DIR]

- ``setup``: a separate venv (``bench/serve/peers/.venv``) with LitServe, Ray Serve, py-spy,
  and the same ONNX Runtime version as lanes' venv; another (``.venv-mlserver``) with MLServer
  and that ONNX Runtime; ``oha`` from crates.io into ``bench/serve/peers/.cargo``; ``ghz``
  (a gRPC load client) from the Go module proxy into ``bench/serve/peers/.go``.
- ``race``: for each repeat, for each model, for each server in turn (A B C A B C): start the
  server alone, measure **overhead** (open loop, 100 req/s Poisson: p50/p99 latency minus the
  bare model's in-process ONNX Runtime p50/p99 at batch 1) and **capacity** (the highest
  Poisson rate with p99 < 50 ms, no errors and nothing unfinished), stop it.
- ``crosscheck``: one point (lanes, ``char_cnn``, 100 req/s) measured by oha and by
  ``lanes bench`` at a constant rate, interleaved.
- ``profile``: py-spy flame graphs (on-CPU and ``--idle``) of ``lanes serve`` near its
  capacity, as SVG under ``docs/results/serving/``.
- ``grpc``: per server with a KServe v2 gRPC port (lanes, MLServer, the native example) and
  model, capacity over REST driven by oha and over gRPC driven by ghz, both at fixed rates
  (``oha -q``, ``ghz --rps``) with the same search as ``race``; the gRPC request carries the
  input in ``raw_input_contents``, as ``tritonclient.grpc`` sends it. ``--client lanes``:
  ``lanes bench`` drives both instead (open loop, Poisson, the same JSON body, sent over gRPC
  as a ``ModelInferRequest`` with ``--kserve-model``), so one client measures both protocols.
- Variants of ``lanes`` for A/Bs, each with its own port: ``lanes-py`` (the graph inside a
  ``python``-adapter model), ``lanes-noinline`` (``--inline-max-us 0``), ``lanes-auto``
  (``--devices auto``: one single-threaded executor per core, where ``lanes`` keeps one
  executor) and ``native`` (the data plane alone, an example binary).
- ``all``: the first four in order (about 22 minutes; ``--quick``: a smoke run of about 5).

**Capacity search** (one server, one model): rates step up by x2 from ``START_RATE`` until a
rate fails (p99 ≥ 50 ms, an error, or an unfinished request); then the bracket [last pass,
first fail] is bisected ``REFINE_STEPS`` times; the answer is the highest passing rate. Each
step is one bounded open-loop run (``STEP_S`` seconds).

Every server gets the same batching (max batch 16, timeout 0 — lanes' eager default), two
workers or one executor per the server's model (see each app's docstring), one intra-op
thread per ONNX Runtime session, loopback only. The client is ``lanes bench`` with one
sender thread. Writes ``race.json`` (every run), ``summary.json`` and ``meta.json``
(``meta-WHAT.json`` when one step runs alone) into ``--out`` (default
``bench/serve/peers/out``) and prints the tables of docs/results/serving.md.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import functools
import json
import os
import platform
import re
import resource
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE))

import protocols  # noqa: E402

import models  # noqa: E402

LANES_VENV = ROOT / ".venv"
PEERS_VENV = HERE / ".venv"
PEERS_PY = PEERS_VENV / "bin" / "python"
OHA = HERE / ".cargo" / "bin" / "oha"
PEER_PACKAGES = ["litserve", "ray[serve]", "numpy", "py-spy"]
MLSERVER_VENV = HERE / ".venv-mlserver"
MLSERVER_PY = MLSERVER_VENV / "bin" / "python"
# uvloop 0.22 broke MLServer 1.7.1's inference workers ("There is no current event loop",
# SeldonIO/MLServer#2286, fix not released); MLflow pins uvloop<0.22 for the same reason.
MLSERVER_PACKAGES = ["mlserver==1.7.1", "uvloop<0.22"]
GHZ = HERE / ".go" / "bin" / "ghz"
GHZ_MODULE = "github.com/bojand/ghz/cmd/ghz@latest"
KSERVE_PROTO = ROOT / "crates" / "lanes-kserve" / "proto" / "grpc_predict_v2.proto"
SERVERS = (
    "lanes",
    "lanes-py",
    "native",
    "mlserver",
    "litserve",
    "ray",
    "lanes-noinline",
    "lanes-auto",
)
PEERS = ("litserve", "ray")  # the servers that need the peers' venv
WORKERS = 2  # the machine's cores: peer workers / replicas
THREADS = 1  # intra-op threads per ONNX Runtime session
SLO_MS = 50.0
OVERHEAD_RATE = 100.0
START_RATE = 50.0
REFINE_STEPS = 3
PORTS = {
    "lanes": 8300,
    "lanes-py": 8500,
    "native": 8400,
    "mlserver": 8600,
    "litserve": 8100,
    "ray": 8200,
    "lanes-noinline": 8700,
    "lanes-auto": 8800,
}
GRPC_SERVERS = ("lanes", "native", "mlserver")  # gRPC on PORTS[server] + 1
# `lanes-py`: `lanes serve` with the same graph inside a `python`-adapter model (ONNX Runtime
# from Python in `predict`), the way a LitServe or Ray Serve user writes one.
# The Rust data plane alone (crates/lanes-server) as an example binary, measured beside them.
NATIVE_BIN = (
    Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release/examples/serve_onnx"
)
CAPACITY_CAP = 128000.0  # req/s: the doubling search stops here
# LitServe's batched loop polls its queue without blocking when batch_timeout is 0 (litserve
# loops/base.py collate_requests: get_nowait, and the loop retries at once), which costs its
# workers CPU while idle on a 2-core host; 1 ms lets the workers block on the queue.
LITSERVE_BATCH_TIMEOUT_US = 1000
# MLServer batches only when max_batch_time > 0 (mlserver/batching/hooks.py load_batching):
# the same 1 ms as LitServe.
MLSERVER_BATCH_TIMEOUT_US = 1000
# The servers and the client outrank the other engineers' builds and tests on this shared
# host (CFS weight about 9x a nice-0 task), equally for all three servers.
NICE = -10
FLAMES = ROOT / "docs" / "results" / "serving"


@dataclass(frozen=True)
class Settings:
    out: Path
    repeats: int
    servers: tuple[str, ...]
    models: tuple[str, ...]
    overhead_s: float
    step_s: float
    profile_s: float


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def sh(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    log("$ " + shlex.join(cmd))
    return subprocess.run(cmd, check=True, text=True, **kwargs)


# --------------------------------------------------------------------------------- setup


def version_of(python: Path, package: str) -> str:
    code = f"import importlib.metadata as m; print(m.version({package!r}))"
    result = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    return result.stdout.strip() or "absent"


def ort_library() -> str:
    """The ONNX Runtime library of lanes' venv (the native server loads it at run time)."""
    code = (
        "import glob, os, onnxruntime; print(sorted(glob.glob(os.path.join("
        "os.path.dirname(onnxruntime.__file__), 'capi', 'libonnxruntime.so*')))[-1])"
    )
    python = str(LANES_VENV / "bin" / "python")
    return subprocess.run([python, "-c", code], capture_output=True, text=True).stdout.strip()


def peer_venv(python: Path, packages: list[str], marker: str) -> None:
    """A venv at ``python``'s root holding ``packages`` and lanes' ONNX Runtime version;
    (re)installed when ONNX Runtime differs or the ``marker`` package is absent."""
    ort = version_of(LANES_VENV / "bin" / "python", "onnxruntime")
    if not python.exists():
        sh([sys.executable, "-m", "venv", str(python.parents[1])])
    if version_of(python, "onnxruntime") != ort or version_of(python, marker) == "absent":
        sh([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
        sh([str(python), "-m", "pip", "install", "--quiet", *packages, f"onnxruntime=={ort}"])


def setup(need_oha: bool, servers: tuple[str, ...] = SERVERS, need_ghz: bool = False) -> None:
    """The peers' venvs (same ONNX Runtime as lanes), oha, ghz and the native server's binary,
    each only when a chosen server or step needs it."""
    if "native" in servers:
        example = ["-p", "lanes-server", "--example", "serve_onnx"]
        sh(["cargo", "build", "--release", "--quiet", *example])
    if need_oha and not OHA.exists():
        sh(["cargo", "install", "oha", "--locked", "--root", str(OHA.parents[1])])
    if need_ghz and not GHZ.exists():
        go = HERE / ".go"
        env = {**os.environ, "GOBIN": str(go / "bin"), "GOPATH": str(go / "path")}
        sh(["go", "install", GHZ_MODULE], env={**env, "GOFLAGS": "-modcacherw"})
    if "mlserver" in servers:
        peer_venv(MLSERVER_PY, MLSERVER_PACKAGES, "mlserver")
    if any(s in PEERS for s in servers):
        peer_venv(PEERS_PY, PEER_PACKAGES, "ray")


def versions() -> dict[str, str]:
    lanes_py = LANES_VENV / "bin" / "python"
    oha = ""
    if OHA.exists():
        oha = subprocess.run([str(OHA), "--version"], capture_output=True, text=True).stdout
    return {
        "lanes": version_of(lanes_py, "lanes"),
        "onnxruntime (lanes)": version_of(lanes_py, "onnxruntime"),
        "litserve": version_of(PEERS_PY, "litserve"),
        "ray": version_of(PEERS_PY, "ray"),
        "onnxruntime (peers)": version_of(PEERS_PY, "onnxruntime"),
        "fastapi (litserve)": version_of(PEERS_PY, "fastapi"),
        "uvicorn (peers)": version_of(PEERS_PY, "uvicorn"),
        "py-spy": version_of(PEERS_PY, "py-spy"),
        "mlserver": version_of(MLSERVER_PY, "mlserver"),
        "onnxruntime (mlserver)": version_of(MLSERVER_PY, "onnxruntime"),
        "uvloop (mlserver)": version_of(MLSERVER_PY, "uvloop"),
        "oha": oha.strip() or "absent",
        "ghz": str(GHZ) if GHZ.exists() else "absent",
        "python": platform.python_version(),
    }


def machine() -> dict[str, Any]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "unknown",
    )
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "kernel": platform.release(),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit,
    }


# ------------------------------------------------------------------------------ servers


def repository(out: Path, model: str) -> Path:
    """A one-model repository ``out/repos/MODEL/MODEL`` (every server serves one model)."""
    repo = out / "repos" / model
    if not (repo / model / "model.onnx").exists():
        full = models.write_repository(out / "repos" / "_all")
        (repo / model).mkdir(parents=True, exist_ok=True)
        for file in ("model.onnx", "model.toml"):
            (repo / model / file).write_bytes((full / model / file).read_bytes())
    return repo


PY_MODEL = """\
import onnxruntime as ort
from pathlib import Path

GRAPH = Path(__file__).with_name("model.onnx")


def load(device):
    options = ort.SessionOptions()
    options.intra_op_num_threads = max(1, device.threads)
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(str(GRAPH), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]

    def predict(batch):
        return dict(zip(names, session.run(names, dict(batch))))

    return predict
"""


def python_repository(out: Path, model: str) -> Path:
    """``repository(out, model)`` with the graph behind the ``python`` adapter (``model.py``
    running ONNX Runtime in ``predict``): ``out/repos-py/MODEL/MODEL``."""
    source = repository(out, model) / model
    repo = out / "repos-py" / model
    (repo / model).mkdir(parents=True, exist_ok=True)
    (repo / model / "model.onnx").write_bytes((source / "model.onnx").read_bytes())
    (repo / model / "model.py").write_text(PY_MODEL)
    toml = (source / "model.toml").read_text()
    toml = re.sub(r"(?m)^adapter = .*$", 'adapter = "python"', toml)
    toml = re.sub(r"(?m)^file = .*$", 'file = "model.py"', toml)
    (repo / model / "model.toml").write_text(toml)
    return repo


def body_file(out: Path, model: str) -> Path:
    """The KServe v2 JSON request every server receives for ``model`` (one FP32 item)."""
    info = models.MODELS[model]
    path = out / "bodies" / f"{model}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    x = models.sample(info)
    tensor = {"name": info.input_name, "shape": list(x.shape), "datatype": "FP32"}
    path.write_text(json.dumps({"inputs": [{**tensor, "data": x.ravel().tolist()}]}))
    return path


def server_command(server: str, repo: Path, model: str) -> list[str]:
    port = str(PORTS[server])
    if server == "native":
        return [
            str(NATIVE_BIN),
            "--port",
            port,
            "--grpc-port",
            str(PORTS[server] + 1),
            "--policy",
            "sjf",
            "--devices",
            "1",
            "--threads",
            str(THREADS),
            f"{model}={repo / model / 'model.onnx'}:{models.MAX_BATCH_SIZE}",
        ]
    if server in ("lanes", "lanes-py", "lanes-noinline", "lanes-auto"):
        # `lanes-noinline`: `lanes serve` with the driver's inline rule off (every batch
        # handed to its device's executor thread), for the latency floor's A/B.
        # `lanes-auto`: `--devices auto`, what docs/serve.md advises on a host without GPUs
        # (one single-threaded executor per core: two model copies here, as the peers' two
        # workers), where `lanes` keeps the race's historical one executor.
        models_dir = python_repository(repo.parent.parent, model) if server == "lanes-py" else repo
        return [
            str(LANES_VENV / "bin" / "lanes"),
            "serve",
            "--models",
            str(models_dir),
            "--devices",
            "auto" if server == "lanes-auto" else "cpu",
            "--cpu-threads",
            str(THREADS),
            "--metrics-port",
            "off",
            "--port",
            port,
            "--grpc-port",
            str(PORTS[server] + 1),
            *(["--inline-max-us", "0"] if server == "lanes-noinline" else []),
        ]
    work = repo.parents[1]  # the race's --out: repos/MODEL sits in it
    app, python, timeout, extra = {
        "litserve": ("litserve_app.py", PEERS_PY, LITSERVE_BATCH_TIMEOUT_US, []),
        "ray": ("ray_app.py", PEERS_PY, models.BATCH_TIMEOUT_US, []),
        "mlserver": (
            "mlserver_app.py",
            MLSERVER_PY,
            MLSERVER_BATCH_TIMEOUT_US,
            ["--grpc-port", str(PORTS[server] + 1), "--work", str(work / "mlserver" / model)],
        ),
    }[server]
    return [
        str(python),
        str(HERE / app),
        *extra,
        "--model-dir",
        str(repo),
        "--name",
        model,
        "--port",
        port,
        "--max-batch-size",
        str(models.MAX_BATCH_SIZE),
        "--batch-timeout-us",
        str(timeout),
        "--workers",
        str(WORKERS),
        "--threads",
        str(THREADS),
    ]


def infer_url(server: str, model: str) -> str:
    return f"http://127.0.0.1:{PORTS[server]}/v2/models/{model}/infer"


def answers(url: str, body: bytes) -> bool:
    request = urllib.request.Request(
        url, data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


@contextlib.contextmanager
def running(server: str, repo: Path, model: str, body: Path, log_file: Path) -> Iterator[int]:
    """Start ``server`` in its own session, wait until an infer request answers 200, yield
    its pid; on exit SIGTERM the session, then SIGKILL whatever is left after 20 s."""
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", PORTS[server])) == 0:
            raise RuntimeError(f"port {PORTS[server]} is in use: stop what listens there")
    cmd = server_command(server, repo, model)
    log("$ " + shlex.join(cmd))
    with log_file.open("w") as sink:
        env = {**os.environ, "ORT_DYLIB_PATH": ort_library()} if server == "native" else None
        proc = subprocess.Popen(
            cmd, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True, env=env
        )
    try:
        deadline = time.monotonic() + 180
        payload = body.read_bytes()
        while not answers(infer_url(server, model), payload):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{server} did not start; see {log_file}")
            time.sleep(0.5)
        for _ in range(50):  # warm every worker
            answers(infer_url(server, model), payload)
        yield proc.pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=20)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # the port must be free for the next server
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", PORTS[server])) != 0:
                    break
            time.sleep(0.2)


# ------------------------------------------------------------------------------ loading


def cpu_busy() -> tuple[float, float]:
    fields = [float(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def bench(
    url: str,
    body: Path,
    rate: float,
    seconds: float,
    out: Path,
    arrival: str = "poisson",
    kserve_model: str | None = None,
) -> dict[str, Any]:
    """One open-loop ``lanes bench`` run; the parsed JSON plus the host's busy fraction. With
    ``kserve_model`` the target is ``grpc://`` and the JSON body goes as a ``ModelInferRequest``
    for that model (``lanes bench --kserve-model``)."""
    how = (
        ["--kserve-model", kserve_model]
        if kserve_model
        else ["-H", "Content-Type: application/json"]
    )
    cmd = [
        str(LANES_VENV / "bin" / "lanes"),
        "bench",
        url,
        "--body-file",
        str(body),
        *how,
        "-R",
        f"{rate:g}",
        "--arrival",
        arrival,
        "-d",
        f"{seconds:g}s",
        "-t",
        "1",
        "-c",
        "128",
        "--timeout",
        "5s",
        "-q",
        "--json",
        str(out),
    ]
    load = Path("/proc/loadavg").read_text().split()[0]
    busy0, total0 = cpu_busy()
    subprocess.run(cmd, check=True)
    busy1, total1 = cpu_busy()
    result: dict[str, Any] = json.loads(out.read_text())
    result.pop("histograms", None)
    result.pop("timeseries", None)
    result["command"] = shlex.join(cmd)
    result["loadavg_before"] = float(load)
    result["host_busy"] = (busy1 - busy0) / max(total1 - total0, 1.0)
    return result


def passes(result: dict[str, Any]) -> bool:
    errors = sum(result["errors"].values()) + result["unfinished"]
    return bool(errors == 0 and result["latency_ms"]["p99"] < SLO_MS)


def search(run_at: Callable[[float], dict[str, Any]]) -> tuple[float, list[dict[str, Any]]]:
    """The highest passing rate: x2 steps from START_RATE, then REFINE_STEPS bisections.
    ``run_at(rate)`` runs one bounded step and returns its result with ``pass`` set and
    ``latency_ms.p99``; the answer comes with every step's result."""
    runs: list[dict[str, Any]] = []

    def trial(rate: float) -> bool:
        result = run_at(rate)
        runs.append(result)
        log(
            f"    {rate:8.1f} req/s  p99 {result['latency_ms']['p99']:9.2f} ms  "
            f"{'pass' if result['pass'] else 'FAIL'}"
        )
        return bool(result["pass"])

    low, high = 0.0, START_RATE
    while trial(high):
        low, high = high, high * 2
        if high > CAPACITY_CAP:
            return low, runs
    for _ in range(REFINE_STEPS):
        mid = (low + high) / 2
        if mid < 1:
            break
        if trial(mid):
            low = mid
        else:
            high = mid
    return low, runs


def capacity(url: str, body: Path, step_s: float, tmp: Path) -> tuple[float, list[dict[str, Any]]]:
    """The highest passing Poisson rate of ``lanes bench`` (:func:`search`, :func:`passes`)."""

    def run_at(rate: float) -> dict[str, Any]:
        result = bench(url, body, rate, step_s, tmp / "step.json")
        return {**result, "pass": passes(result)}

    return search(run_at)


def interleaved(
    repeats: int, models_: tuple[str, ...], servers: tuple[str, ...]
) -> Iterator[tuple[int, str, str]]:
    """(repeat, model, server) in the race's order: per repeat, per model, every server in
    turn, the order rotated by one each repeat so no server always follows the same one."""
    for repeat in range(repeats):
        shift = repeat % len(servers)
        for model in models_:
            for server in servers[shift:] + servers[:shift]:
                yield repeat, model, server


@dataclass(frozen=True)
class Turn:
    """One server's turn on one model in one repeat, with its request body and log file."""

    repeat: int
    model: str
    server: str
    repo: Path
    body: Path
    log_file: Path


def turns(settings: Settings, step: str, servers: tuple[str, ...]) -> Iterator[Turn]:
    """:func:`interleaved` over ``settings``, each turn announced and given its files."""
    (settings.out / "logs").mkdir(parents=True, exist_ok=True)
    for repeat, model, server in interleaved(settings.repeats, settings.models, servers):
        log(f"[{step} {repeat + 1}/{settings.repeats}] {server} · {model}")
        repo, body = repository(settings.out, model), body_file(settings.out, model)
        logf = settings.out / "logs" / f"{step}-{server}-{model}-{repeat}.log"
        yield Turn(repeat, model, server, repo, body, logf)


def race(settings: Settings, bare: dict[str, models.Bare]) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    tmp = settings.out / "runs"
    tmp.mkdir(parents=True, exist_ok=True)
    for turn in turns(settings, "race", settings.servers):
        repeat, model, server, body = turn.repeat, turn.model, turn.server, turn.body
        url = infer_url(server, model)
        with running(server, turn.repo, model, body, turn.log_file):
            over = bench(url, body, OVERHEAD_RATE, settings.overhead_s, tmp / "o.json")
            cap, steps = capacity(url, body, settings.step_s, tmp)
        lat = over["latency_ms"]
        b = bare[model]
        record = {
            "repeat": repeat,
            "server": server,
            "model": model,
            "overhead_run": over,
            "p50_ms": lat["p50"],
            "p99_ms": lat["p99"],
            "added_p50_us": lat["p50"] * 1000 - b.p50_us,
            "added_p99_us": lat["p99"] * 1000 - b.p99_us,
            "overhead_errors": sum(over["errors"].values()) + over["unfinished"],
            "capacity_rps": cap,
            "capacity_runs": steps,
        }
        log(
            f"  added p50 {record['added_p50_us']:.0f} µs, p99 "
            f"{record['added_p99_us']:.0f} µs; capacity {cap:.0f} req/s"
        )
        save(records, record, settings.out / "race.json")
    return records


def save(records: list[dict[str, Any]], record: dict[str, Any], path: Path) -> None:
    """Append ``record`` and rewrite ``path`` with every record so far (a run cut short
    keeps what it measured)."""
    records.append(record)
    path.write_text(json.dumps(records, indent=1) + "\n")


def summarise(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians (and min-max) per server and model; ratios lanes/peer as medians of the
    per-repeat ratios (each repeat's three servers ran back to back)."""
    summary: dict[str, Any] = {}
    for model in sorted({r["model"] for r in records}):
        rows: dict[str, dict[str, Any]] = {}
        for server in SERVERS:
            mine = [r for r in records if r["model"] == model and r["server"] == server]
            if not mine:
                continue
            rows[server] = {
                key: {
                    "median": statistics.median(r[key] for r in mine),
                    "min": min(r[key] for r in mine),
                    "max": max(r[key] for r in mine),
                }
                for key in ("added_p50_us", "added_p99_us", "p50_ms", "p99_ms", "capacity_rps")
            }
            rows[server]["repeats"] = len(mine)
        ratios = {}
        for peer in ("mlserver", "litserve", "ray"):
            per: list[float] = []
            below = 0
            for repeat in sorted({r["repeat"] for r in records}):
                pair = {
                    r["server"]: r["capacity_rps"]
                    for r in records
                    if r["model"] == model and r["repeat"] == repeat
                }
                if pair.get("lanes") and pair.get(peer):
                    per.append(pair["lanes"] / pair[peer])
                elif pair.get("lanes") and pair.get(peer) == 0:
                    below += 1  # the peer failed even the lowest rate tried: no finite ratio
            if per or below:
                ratios[f"lanes/{peer}"] = {
                    "repeats_peer_below_lowest_rate": below,
                    "median": statistics.median(per) if per else None,
                    "min": min(per, default=None),
                    "max": max(per, default=None),
                    "per_repeat": per,
                }
        summary[model] = {"servers": rows, "capacity_ratios": ratios}
    return summary


def print_tables(summary: dict[str, Any], bare: dict[str, models.Bare]) -> None:
    for model, data in summary.items():
        b = bare[model]
        print(f"\n{model}: bare ORT p50 {b.p50_us:.0f} µs, p99 {b.p99_us:.0f} µs")
        print("| server | p50 ms | p99 ms | added p50 µs | added p99 µs | capacity req/s |")
        print("|---|---:|---:|---:|---:|---:|")
        for server, row in data["servers"].items():
            cap = row["capacity_rps"]
            print(
                f"| {server} | {row['p50_ms']['median']:.2f} | {row['p99_ms']['median']:.2f} | "
                f"{row['added_p50_us']['median']:.0f} | {row['added_p99_us']['median']:.0f} | "
                f"{cap['median']:.0f} ({cap['min']:.0f}-{cap['max']:.0f}) |"
            )
        for name, ratio in data["capacity_ratios"].items():
            finite = ", ".join(f"{x:.2f}" for x in ratio["per_repeat"])
            below = ratio["repeats_peer_below_lowest_rate"]
            print(f"{name}: per repeat {finite or '-'}; peer below the lowest rate in {below}")


# ------------------------------------------------------------------- cross-check, profile


def crosscheck(settings: Settings) -> dict[str, Any]:
    """lanes, char_cnn, 100 req/s constant: oha (``-q``, ``--latency-correction``) and
    ``lanes bench --arrival constant``, alternated twice."""
    model = "char_cnn" if "char_cnn" in settings.models else settings.models[0]
    repo, body = repository(settings.out, model), body_file(settings.out, model)
    url = infer_url("lanes", model)
    seconds = settings.overhead_s
    result: dict[str, Any] = {"model": model, "rate": OVERHEAD_RATE, "runs": []}
    with running("lanes", repo, model, body, settings.out / "logs" / "crosscheck.log"):
        for _ in range(2):
            lanes = bench(
                url, body, OVERHEAD_RATE, seconds, settings.out / "runs" / "x.json", "constant"
            )
            fixed = ("-q", f"{OVERHEAD_RATE:g}", "--latency-correction")
            cmd = protocols.oha_post(OHA, url, body, seconds, 64, *fixed)
            log("$ " + shlex.join(cmd))
            oha = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
            pct = oha["latencyPercentiles"]
            result["runs"].append(
                {
                    "lanes_bench": {k: lanes["latency_ms"][k] for k in ("p50", "p90", "p99")},
                    "oha": {k: pct[k] * 1000 for k in ("p50", "p90", "p99")},
                    "oha_rps": oha["summary"]["requestsPerSec"],
                    "oha_command": shlex.join(cmd),
                    "lanes_command": lanes["command"],
                }
            )
            last = result["runs"][-1]
            log(f"  lanes bench {last['lanes_bench']}  oha {last['oha']}")
    return result


CPU_RATE = 1000.0  # req/s: the rate of the CPU-per-request measurement (issue 14)
CLOSED_CONNECTIONS = 64  # closed-loop throughput: connections of both clients


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def group_cpu_s(pgid: int) -> float:
    """User + system CPU seconds of the live processes in process group ``pgid`` (a server
    and its workers: MLServer's inference processes, Ray's actors), from /proc."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid:
                total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def children_cpu_s() -> float:
    """CPU seconds of this process's waited-for children (the load clients) so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def closed_loop_oha(url: str, body: Path, seconds: float) -> dict[str, Any]:
    cmd = protocols.oha_post(OHA, url, body, seconds, CLOSED_CONNECTIONS)
    log("$ " + shlex.join(cmd))
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    codes = out.get("statusCodeDistribution", {})
    return {"rps": out["summary"]["requestsPerSec"], "status": codes, "command": shlex.join(cmd)}


def closed_loop_lanes(url: str, body: Path, seconds: float, out: Path) -> dict[str, Any]:
    cmd = [
        str(LANES_VENV / "bin" / "lanes"),
        "bench",
        url,
        "--body-file",
        str(body),
        "-H",
        "Content-Type: application/json",
        "-c",
        str(CLOSED_CONNECTIONS),
        "-t",
        "1",
        "-d",
        f"{seconds:g}s",
        "-q",
        "--json",
        str(out),
    ]
    log("$ " + shlex.join(cmd))
    subprocess.run(cmd, check=True)
    result = json.loads(out.read_text())
    return {"rps": result["rps"], "command": shlex.join(cmd)}


def cpu(settings: Settings) -> list[dict[str, Any]]:
    """Per server and model, interleaved over repeats: the server's CPU per request at
    ``CPU_RATE`` req/s (constant arrivals, /proc CPU time of the server process over the run),
    and closed-loop throughput at ``CLOSED_CONNECTIONS`` connections by ``lanes bench`` and oha
    (the cross-check by a client nobody here wrote)."""
    records: list[dict[str, Any]] = []
    tmp = settings.out / "runs"
    for turn in turns(settings, "cpu", settings.servers):
        repeat, model, server, body = turn.repeat, turn.model, turn.server, turn.body
        url = infer_url(server, model)
        with running(server, turn.repo, model, body, turn.log_file) as pid:
            before = process_cpu_s(pid)
            run = bench(url, body, CPU_RATE, settings.overhead_s, tmp / "cpu.json", "constant")
            used = process_cpu_s(pid) - before
            done = run["requests"]
            oha = closed_loop_oha(url, body, settings.step_s)
            lanes = closed_loop_lanes(url, body, settings.step_s, tmp / "closed.json")
        record = {
            "server": server,
            "model": model,
            "repeat": repeat,
            "cpu_us_per_request": used * 1e6 / max(done, 1),
            "requests": done,
            "p50_ms": run["latency_ms"]["p50"],
            "p99_ms": run["latency_ms"]["p99"],
            "host_busy": run["host_busy"],
            "loadavg_before": run["loadavg_before"],
            "closed_oha_rps": oha["rps"],
            "closed_lanes_rps": lanes["rps"],
            "commands": [run["command"], oha["command"], lanes["command"]],
        }
        log(
            f"  {record['cpu_us_per_request']:.0f} µs CPU/request at {CPU_RATE:g} req/s; "
            f"closed loop oha {oha['rps']:.0f}, lanes bench {lanes['rps']:.0f} req/s"
        )
        save(records, record, settings.out / "cpu.json")
    return records


def grpc_body_file(out: Path, model: str) -> Path:
    """The gRPC ``ModelInferRequest`` (ghz's JSON form) carrying :func:`body_file`'s input."""
    info = models.MODELS[model]
    request = protocols.grpc_request(model, info.input_name, models.sample(info))
    return protocols.write_json(out / "bodies" / f"{model}.grpc.json", request)


def lanes_step(
    protocol: str, server: str, model: str, rate: float, seconds: float, out: Path, pid: int
) -> dict[str, Any]:
    """One bounded open-loop ``lanes bench`` step over REST or gRPC (the same client, sender
    thread, connections/streams and body either way; :func:`passes`), with the CPU per request
    of the server (process group ``pid``) and of the client."""
    body = body_file(out, model)
    server0, client0 = group_cpu_s(pid), children_cpu_s()
    if protocol == "rest":
        result = bench(infer_url(server, model), body, rate, seconds, out / "runs" / "step.json")
    else:
        url = f"grpc://127.0.0.1:{PORTS[server] + 1}"
        step = out / "runs" / "step.json"
        result = bench(url, body, rate, seconds, step, kserve_model=model)
    server1, client1 = group_cpu_s(pid), children_cpu_s()
    result.update(
        rate=rate,
        server_cpu_us_per_request=(server1 - server0) * 1e6 / max(result["requests"], 1),
        client_cpu_us_per_request=(client1 - client0) * 1e6 / max(result["requests"], 1),
    )
    result["pass"] = passes(result)
    return result


def fixed_rate(
    protocol: str, server: str, model: str, rate: float, seconds: float, out: Path, pid: int
) -> dict[str, Any]:
    """One bounded fixed-rate step: oha over REST or ghz over gRPC, in the common shape of
    :mod:`protocols`, with its command, the host's busy fraction, the CPU per request of the
    server (process group ``pid``) and of the client, and ``pass``."""
    if protocol == "rest":
        body = body_file(out, model)
        cmd = protocols.oha_command(OHA, infer_url(server, model), body, rate, seconds)
    else:
        target = f"127.0.0.1:{PORTS[server] + 1}"
        report = out / "runs" / "ghz.json"
        data = grpc_body_file(out, model)
        cmd = protocols.ghz_command(GHZ, KSERVE_PROTO, target, data, rate, seconds, report)
    busy0, total0 = cpu_busy()
    server0, client0 = group_cpu_s(pid), children_cpu_s()
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    server1, client1 = group_cpu_s(pid), children_cpu_s()
    busy1, total1 = cpu_busy()
    if protocol == "rest":
        result = protocols.read_oha(json.loads(done.stdout))
    else:
        result = protocols.read_ghz(json.loads(report.read_text()))
    result.update(
        rate=rate,
        command=shlex.join(cmd),
        host_busy=(busy1 - busy0) / max(total1 - total0, 1.0),
        server_cpu_us_per_request=(server1 - server0) * 1e6 / max(result["requests"], 1),
        client_cpu_us_per_request=(client1 - client0) * 1e6 / max(result["requests"], 1),
    )
    result["pass"] = protocols.passes(result, rate, SLO_MS)
    return result


def grpc(
    settings: Settings, bare: dict[str, models.Bare], client: str = "peers"
) -> list[dict[str, Any]]:
    """Per server with a gRPC port and model, interleaved over repeats: capacity over REST
    and over gRPC, in alternating order, each with :func:`search`; the step at
    ``OVERHEAD_RATE`` (on the x2 ladder) gives the latency at 100 req/s. ``client`` ``peers``:
    oha over REST, ghz over gRPC (records in grpc.json); ``lanes``: ``lanes bench`` over both,
    open loop, Poisson (records in grpc-lanes.json)."""
    records: list[dict[str, Any]] = []
    step_fn = lanes_step if client == "lanes" else fixed_rate
    names = (
        {"rest": "lanes bench", "grpc": "lanes bench"}
        if client == "lanes"
        else {
            "rest": "oha",
            "grpc": "ghz",
        }
    )
    path = settings.out / ("grpc-lanes.json" if client == "lanes" else "grpc.json")
    servers = tuple(s for s in settings.servers if s in GRPC_SERVERS)
    for turn in turns(settings, "grpc", servers):
        repeat, model, server = turn.repeat, turn.model, turn.server
        with running(server, turn.repo, model, turn.body, turn.log_file) as pid:
            fixed_rate("grpc", server, model, 200, 1, settings.out, pid)  # warm the gRPC path
            for protocol in ("rest", "grpc") if repeat % 2 == 0 else ("grpc", "rest"):
                log(f"  {protocol}")
                step = functools.partial(
                    step_fn,
                    protocol,
                    server,
                    model,
                    seconds=settings.step_s,
                    out=settings.out,
                    pid=pid,
                )
                cap, steps = search(step)
                at = next((r for r in steps if r["rate"] == OVERHEAD_RATE), None)
                lat = at["latency_ms"] if at else {"p50": float("nan"), "p99": float("nan")}
                record = {
                    "repeat": repeat,
                    "server": server,
                    "model": model,
                    "protocol": protocol,
                    "client": names[protocol],
                    "capacity_rps": cap,
                    "p50_ms_at_100": lat["p50"],
                    "p99_ms_at_100": lat["p99"],
                    "added_p50_us_at_100": lat["p50"] * 1000 - bare[model].p50_us,
                    "added_p99_us_at_100": lat["p99"] * 1000 - bare[model].p99_us,
                    "cpu_us_per_request_by_rate": {
                        f"{r['rate']:g}": {
                            "server": r["server_cpu_us_per_request"],
                            "client": r["client_cpu_us_per_request"],
                        }
                        for r in steps
                    },
                    "capacity_runs": steps,
                }
                log(f"  {protocol}: capacity {cap:.0f} req/s")
                save(records, record, path)
    return records


CPU_LADDER_RATE = 400.0  # a rate on the x2 ladder every server here passes: CPU compared there


def print_protocols(records: list[dict[str, Any]]) -> None:
    """The ``grpc`` step's table: capacity mean (range) and p50/p99 at 100 req/s (medians)."""
    print(
        "| model | server | protocol (client) | capacity req/s | p50 / p99 ms at 100 req/s | "
        f"server / client CPU µs per request at {CPU_LADDER_RATE:g} req/s |"
    )
    print("|---|---|---|---:|---:|---:|")
    for key in sorted({(r["model"], r["server"], r["protocol"]) for r in records}):
        model, server, protocol = key
        mine = [r for r in records if (r["model"], r["server"], r["protocol"]) == key]
        caps = [r["capacity_rps"] for r in mine]
        p50 = statistics.median(r["p50_ms_at_100"] for r in mine)
        p99 = statistics.median(r["p99_ms_at_100"] for r in mine)
        cpu = [r["cpu_us_per_request_by_rate"].get(f"{CPU_LADDER_RATE:g}") for r in mine]
        both = [c for c in cpu if c]
        cpu_cell = (
            f"{statistics.median(c['server'] for c in both):.0f} / "
            f"{statistics.median(c['client'] for c in both):.0f}"
            if both
            else "-"
        )
        print(
            f"| {model} | {server} | {protocol} ({mine[0]['client']}) | "
            f"{statistics.mean(caps):.0f} ({min(caps):.0f}-{max(caps):.0f}) | "
            f"{p50:.2f} / {p99:.2f} | {cpu_cell} |"
        )


WAITS = ("EpollSelector.select", "_worker (concurrent/futures/thread.py:81)", "Condition.wait")


def hot_frames(raw: Path, top: int = 25) -> dict[str, Any]:
    """Summarise py-spy's collapsed stacks (``-f raw``): the share of samples in which each
    frame appears (inclusive) and is the leaf (self), after dropping samples whose leaf is a
    known wait (epoll, an idle pool thread, a condition) that py-spy counted as active."""
    inclusive: dict[str, int] = {}
    leaf: dict[str, int] = {}
    total = waiting = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        n = int(count)
        frames = stack.split(";")
        total += n
        if any(frames[-1].startswith(w) for w in WAITS):
            waiting += n
            continue
        leaf[frames[-1]] = leaf.get(frames[-1], 0) + n
        for frame in set(frames):
            inclusive[frame] = inclusive.get(frame, 0) + n
    busy = max(total - waiting, 1)

    def ranked(counts: dict[str, int]) -> list[tuple[str, float]]:
        items = sorted(counts.items(), key=lambda kv: -kv[1])[:top]
        return [(frame, round(n / busy, 4)) for frame, n in items]

    return {
        "samples": total,
        "waiting": waiting,
        "inclusive": ranked(inclusive),
        "self": ranked(leaf),
    }


def profile(settings: Settings, rates: dict[str, float]) -> dict[str, Any]:
    """py-spy flame graphs of ``lanes serve`` under open-loop load at ``rates[model]``: on-CPU
    (py-spy's default: idle threads left out) and ``--idle`` (where the threads wait), each
    over ``profile_s`` seconds of one run, sampled without pausing the process
    (``--nonblocking``; py-spy refuses ``--native`` with it). Writes the SVGs under
    docs/results/serving/ and the collapsed stacks plus :func:`hot_frames` into ``--out``."""
    pyspy = PEERS_VENV / "bin" / "py-spy"
    FLAMES.mkdir(parents=True, exist_ok=True)
    done: dict[str, Any] = {}
    for model, rate in rates.items():
        repo, body = repository(settings.out, model), body_file(settings.out, model)
        for kind, flags in (("oncpu", []), ("idle", ["--idle"])):
            svg = FLAMES / f"lanes-{model}-{kind}.svg"
            raw = settings.out / f"lanes-{model}-{kind}.txt"
            with running("lanes", repo, model, body, settings.out / "logs" / "profile.log") as pid:
                load = subprocess.Popen(
                    [
                        str(LANES_VENV / "bin" / "lanes"),
                        "bench",
                        infer_url("lanes", model),
                        "--body-file",
                        str(body),
                        "-H",
                        "Content-Type: application/json",
                        "-R",
                        f"{rate:g}",
                        "-d",
                        f"{2 * settings.profile_s + 4:g}s",
                        "-t",
                        "1",
                        "-q",
                        "--json",
                        str(settings.out / "runs" / "profile.json"),
                    ]
                )
                base = [
                    str(pyspy),
                    "record",
                    "-p",
                    str(pid),
                    "-d",
                    f"{settings.profile_s:g}",
                    "-r",
                    "100",
                    "--nonblocking",
                    "--threads",
                    *flags,
                ]
                cmd = [*base, "-f", "flamegraph", "-o", str(svg)]
                sh(cmd, capture_output=True)
                sh([*base, "-f", "raw", "-o", str(raw)], capture_output=True)
                load.wait()
            done[f"{model}-{kind}"] = {
                "svg": str(svg.relative_to(ROOT)),
                "rate": rate,
                "command": shlex.join(cmd),
                "hot": hot_frames(raw),
            }
    return done


# ---------------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "what",
        nargs="?",
        default="all",
        choices=["all", "setup", "race", "crosscheck", "profile", "cpu", "grpc"],
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 repeat, short runs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--servers", default=",".join(SERVERS))
    parser.add_argument("--models", default="identity,char_cnn")
    parser.add_argument("--out", type=Path, default=HERE / "out")
    parser.add_argument(
        "--client",
        choices=("peers", "lanes"),
        default="peers",
        help="grpc step: oha (REST) and ghz (gRPC), or lanes bench over both",
    )
    args = parser.parse_args()
    servers = tuple(s for s in args.servers.split(",") if s)
    for s in servers:
        if s not in SERVERS:
            parser.error(f"--servers: unknown server {s!r}; allowed: {', '.join(SERVERS)}")
    chosen = tuple(m for m in args.models.split(",") if m)
    for m in chosen:
        if m not in models.MODELS:
            parser.error(f"--models: unknown model {m!r}; allowed: {', '.join(models.MODELS)}")
    settings = Settings(
        out=args.out,
        repeats=1 if args.quick else args.repeats,
        servers=servers,
        models=chosen,
        overhead_s=3 if args.quick else 10,
        step_s=3 if args.quick else 6,
        profile_s=3 if args.quick else 10,
    )
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the servers on the way out
    try:
        os.setpriority(os.PRIO_PROCESS, 0, NICE)
    except PermissionError:
        log(f"! cannot renice to {NICE} (not root): runs compete with other work equally")
    settings.out.mkdir(parents=True, exist_ok=True)
    (settings.out / "runs").mkdir(exist_ok=True)
    setup(
        need_oha=args.what in ("all", "setup", "crosscheck", "cpu", "grpc"),
        servers=servers,
        need_ghz=args.what == "setup" or (args.what == "grpc" and args.client == "peers"),
    )
    if args.what == "setup":
        return
    meta: dict[str, Any] = {
        "machine": machine(),
        "versions": versions(),
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "litserve_batch_timeout_us": LITSERVE_BATCH_TIMEOUT_US,
        "settings": {**asdict(settings), "out": str(settings.out)},
        "argv": sys.argv,
    }
    bare = {
        m: models.bare_latency(
            repository(settings.out, m) / m / "model.onnx", models.MODELS[m], THREADS
        )
        for m in chosen
    }
    meta["bare"] = {m: asdict(b) for m, b in bare.items()}
    lanes_client = args.what == "grpc" and args.client == "lanes"
    step_name = f"{args.what}-lanes" if lanes_client else args.what
    meta_path = settings.out / (
        "meta.json" if args.what in ("all", "race") else f"meta-{step_name}.json"
    )
    meta_path.write_text(json.dumps(meta, indent=1) + "\n")
    summary_path = settings.out / "summary.json"
    summary: dict[str, Any] = {}
    if args.what in ("all", "race"):
        summary = summarise(race(settings, bare))
        summary_path.write_text(json.dumps(summary, indent=1) + "\n")
        print_tables(summary, bare)
    if args.what in ("all", "crosscheck"):
        check = crosscheck(settings)
        (settings.out / "crosscheck.json").write_text(json.dumps(check, indent=1) + "\n")
    if args.what in ("all", "profile"):
        if not summary and summary_path.exists():
            summary = json.loads(summary_path.read_text())
        rates = {
            m: max(START_RATE, 0.9 * summary[m]["servers"]["lanes"]["capacity_rps"]["median"])
            if m in summary and "lanes" in summary[m]["servers"]
            else 200.0
            for m in chosen
        }
        flames = profile(settings, rates)
        (settings.out / "profile.json").write_text(json.dumps(flames, indent=1) + "\n")
    if args.what in ("all", "cpu"):
        cpu(settings)  # writes cpu.json as it goes
    if args.what == "grpc":
        print_protocols(grpc(settings, bare, args.client))  # writes grpc*.json as it goes
    meta["finished"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    meta_path.write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    main()
