"""The one typed configuration of ``lanes serve``.

Sources, highest first: command line, environment (``LANES_SERVE_<KEY>``, e.g.
``LANES_SERVE_POLICY=fifo``), a TOML file (``--config FILE``, keys as below, at the top level or
under ``[serve]``), defaults. :func:`resolve` merges them and checks every value before anything
starts; a bad value is one ``LanesError`` line naming the key, the value and what is allowed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from lanes.errors import BAD_ARGUMENT, LanesError

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

CONFIG_INVALID = "config_invalid"

MAX_TRACE_REQUESTS = 10_000_000
"""The most request spans ``--trace-requests`` may keep (about 100 bytes each)."""
"""A ``--config`` file that cannot be read, is not TOML, or has an unknown key."""

POLICIES = (
    "auto, independent, fifo, limit:K, sjf[:alpha=A,slack=MS|off,starve=MS|off], "
    "fair[:alpha=A,slack=MS|off,starve=MS|off,threshold=MS,cap=MS,usage=MS|off,fast=MS|off,"
    "hold=MS,budget=MS|off,burst=MS|off,width=K,beside=long|any], "
    "lanes[:alpha=A,slack=MS|off,starve=MS|off,fast=MS,hold=MS,budget=MS|off,burst=MS|off,"
    "width=K,beside=long|any], edf"
)


@dataclass(frozen=True)
class ServeConfig:
    """Everything ``lanes serve`` needs to start.

    - ``models``: a model repository folder; None serves the built-in demo zoo.
    - ``devices``: ``auto``, ``cpu``, ``cpu:N``, ``cuda:0,cuda:1``, ``sim:N``
      (see lanes.serving.devices).
    - ``policy``: ``auto`` (by the devices' kind: lanes.serving.default_policy), ``independent``,
      ``fifo``, ``limit:K``, ``sjf``, ``fair``, ``lanes``, ``edf``.
    - ``cpu_threads``: intra-op threads per CPU executor (None: as ``auto`` decides, see
      lanes.serving.devices; for ``cpu``/``cpu:N`` the cores divided among the executors).
    - ``workers``: threads of the CPU pool for pre/post-processing.
    - ``max_body_mb``: the request body limit (413 past it; gRPC messages: ``OUT_OF_RANGE``).
    - Connection limits, bounding what slow and hostile clients hold (docs/serve.md):
      ``max_connections`` open per listener (REST and gRPC apart; past it new ones wait in the
      listen backlog); ``header_timeout``: seconds a client has to send a request's head, or
      HTTP/2's preface on gRPC (a head begun: 408 and closed; an idle connection: closed);
      ``body_timeout``: seconds for a request's body (408); ``max_header_kb``: the largest
      request head (431 past it); ``grpc_keepalive``: seconds between the keep-alive pings of
      a gRPC connection (a peer that does not answer within 20 s is closed).
    - ``zoo_backend``: the demo zoo's runtime, ``onnx`` (ONNX Runtime) or ``torch`` (PyTorch,
      the same weights; for GPU hosts with PyTorch but no CUDA build of ONNX Runtime).
    - ``cuda_graphs``: with ``zoo_backend = torch``, each ``cuda:N`` replica replays its network
      as a CUDA graph per batch shape and executor thread, captured at warm-up (one launch per
      batch instead of one per kernel; lanes.models.cuda_graphs).
    - ``metrics_port``: Prometheus ``/metrics`` port (Triton's 8002; 0: any free; None: off).
    - ``grpc_port``: KServe v2 gRPC port: ``auto`` (Triton's 8001 beside the default ``port``
      8000; any free port when ``port`` is anything else, announced at start), ``off``, or a
      port (0: any free).
    - ``trace``: a file the device timeline (Chrome trace-event JSON) is written to at exit.
    - ``trace_events``: the timeline's ring buffer, in events.
    - ``trace_requests``: the request spans the timeline also keeps (each successful request's
      stages on the server's threads; 0: none).
    - ``inline_max_us``: on an idle server (no batch running or finished within 1 ms), a batch
      estimated to run at most this many µs runs on the server's driver thread instead of waking
      its device's executor (native ONNX models on CPU devices only; 0: never): two wake-ups
      fewer for a lone request to a small model (docs/serve.md).
    - ``warmup_batches``: batches run per model, device and batch size before ready (0: none).
    - ``drain_timeout``: seconds in-flight work may take to finish after SIGTERM/SIGINT.
    - ``log_format``: ``text`` or ``json``; ``log_level``: ``debug``, ``info``, ``warning``,
      ``error``; ``access_log``: one line per request (off by default).
    - ``deadline_rule``: ``start`` (a request must start by its deadline; a batch cut just before
      it runs to the end: Triton's queue policy) or ``finish`` (also, when its batch is cut, a
      request estimated to end past its deadline is answered 504 and not run; docs/serve.md).
    - ``arbiter``: ``unix:PATH`` of a ``lanes arbiter`` daemon to take device grants from
      (None: this process schedules its devices alone); ``arbiter_fallback`` while the daemon is
      down: ``fail_open`` (run at ``limit:1`` per device in this process) or ``fail_closed``
      (answer 503 once a request's deadline passes).
    """

    models: Path | None = None
    devices: str = "auto"
    policy: str = "auto"
    host: str = "127.0.0.1"
    port: int = 8000
    cpu_threads: int | None = None
    workers: int = max(1, min(4, os.cpu_count() or 1))
    max_body_mb: float = 64.0
    max_connections: int = 16_384
    header_timeout: float = 30.0
    body_timeout: float = 60.0
    max_header_kb: int = 64
    grpc_keepalive: float = 30.0
    zoo_backend: str = "onnx"
    cuda_graphs: bool = False
    metrics_port: int | None = 8002
    grpc_port: str = "auto"
    trace: Path | None = None
    trace_events: int = 200_000
    trace_requests: int = 0
    inline_max_us: int = 200
    warmup_batches: int = 2
    drain_timeout: float = 30.0
    log_format: str = "text"
    log_level: str = "info"
    access_log: bool = False
    deadline_rule: str = "start"
    arbiter: str | None = None
    arbiter_fallback: str = "fail_open"

    @property
    def max_body_bytes(self) -> int:
        return int(self.max_body_mb * 1024 * 1024)

    @property
    def grpc_bind(self) -> int | None:
        """The gRPC port to bind (0: any free), or None when off."""
        if self.grpc_port == "off":
            return None
        if self.grpc_port == "auto":
            return 8001 if self.port == 8000 else 0
        return int(self.grpc_port)


_KEYS = {f.name for f in fields(ServeConfig)}


def _convert(key: str, value: Any, where: str) -> Any:
    """A raw value (str from env/CLI, or TOML-typed) as the field's type, checked."""
    try:
        if key == "models":
            return None if value in (None, "", "demo") else Path(str(value))
        if key == "trace":
            return None if value in (None, "", "off") else Path(str(value))
        v: int | float | str | bool | None
        if key in (
            "port",
            "workers",
            "trace_events",
            "trace_requests",
            "inline_max_us",
            "warmup_batches",
            "max_connections",
            "max_header_kb",
        ):
            v = int(value)
        elif key == "metrics_port":
            v = None if value in (None, "", "off", "none") else int(value)
        elif key == "grpc_port":
            text = str(value).strip().lower()
            if text in ("off", "none"):
                v = "off"
            elif text in ("", "auto"):
                v = "auto"
            else:
                v = str(int(text))
        elif key in ("drain_timeout", "header_timeout", "body_timeout", "grpc_keepalive"):
            v = float(value)
        elif key in ("access_log", "cuda_graphs"):
            v = _flag(value)
        elif key == "arbiter":
            v = None if value in (None, "", "off", "none") else str(value)
        elif key == "cpu_threads":
            v = None if value in (None, "", "auto") else int(value)
        elif key == "max_body_mb":
            v = float(value)
        else:
            v = str(value)
    except (TypeError, ValueError):
        name = key.replace("_", "-") if where == "--" else key  # a flag as it is typed
        raise LanesError(BAD_ARGUMENT, f"{where}{name} = {value!r}: not a valid value") from None
    return v


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(text)


def check(cfg: ServeConfig, origin: Mapping[str, str] | None = None) -> ServeConfig:
    """Refuse out-of-range values with a message naming the setting and what is allowed: as
    ``origin`` names where each key's value came from (``--grpc-port``,
    ``LANES_SERVE_GRPC_PORT``, ``serve.toml: grpc_port``), else by its key (the Python API)."""
    named = origin or {}

    def at(key: str) -> str:
        return named.get(key, key)

    if not 0 <= cfg.port <= 65535:
        raise LanesError(
            BAD_ARGUMENT, f"{at('port')} = {cfg.port}: must be 0..65535 (0: any free port)"
        )
    if cfg.workers < 1:
        raise LanesError(BAD_ARGUMENT, f"{at('workers')} = {cfg.workers}: must be >= 1")
    if cfg.cpu_threads is not None and cfg.cpu_threads < 1:
        raise LanesError(
            BAD_ARGUMENT, f"{at('cpu_threads')} = {cfg.cpu_threads}: must be >= 1 or auto"
        )
    if cfg.zoo_backend not in ("onnx", "torch"):
        raise LanesError(
            BAD_ARGUMENT, f"{at('zoo_backend')} = {cfg.zoo_backend!r}: allowed are onnx, torch"
        )
    if cfg.cuda_graphs and (cfg.zoo_backend != "torch" or cfg.models is not None):
        raise LanesError(
            BAD_ARGUMENT,
            f"{at('cuda_graphs')} = true: CUDA graphs are the demo zoo's torch backend's "
            "(set zoo_backend = torch and serve the demo zoo)",
        )
    if cfg.metrics_port is not None and not 0 <= cfg.metrics_port <= 65535:
        raise LanesError(
            BAD_ARGUMENT,
            f"{at('metrics_port')} = {cfg.metrics_port}: "
            "must be 0..65535 (0: any free port) or off",
        )
    if cfg.grpc_port not in ("auto", "off") and not 0 <= int(cfg.grpc_port) <= 65535:
        raise LanesError(
            BAD_ARGUMENT,
            f"{at('grpc_port')} = {cfg.grpc_port}: "
            "must be 0..65535 (0: any free port), auto or off",
        )
    if cfg.trace_events < 1000:
        raise LanesError(
            BAD_ARGUMENT, f"{at('trace_events')} = {cfg.trace_events}: must be >= 1000"
        )
    if not 0 <= cfg.trace_requests <= MAX_TRACE_REQUESTS:
        raise LanesError(
            BAD_ARGUMENT,
            f"{at('trace_requests')} = {cfg.trace_requests}: must be 0..{MAX_TRACE_REQUESTS} "
            "(0: no request spans)",
        )
    if not 0 <= cfg.inline_max_us <= 1000:
        raise LanesError(
            BAD_ARGUMENT,
            f"{at('inline_max_us')} = {cfg.inline_max_us}: must be 0..1000 µs (0: never inline)",
        )
    if not 0 <= cfg.warmup_batches <= 100:
        raise LanesError(
            BAD_ARGUMENT, f"{at('warmup_batches')} = {cfg.warmup_batches}: must be 0..100"
        )
    if not 0 <= cfg.drain_timeout <= 3600:
        raise LanesError(
            BAD_ARGUMENT, f"{at('drain_timeout')} = {cfg.drain_timeout}: must be 0..3600 seconds"
        )
    if cfg.log_format not in ("text", "json"):
        raise LanesError(
            BAD_ARGUMENT, f"{at('log_format')} = {cfg.log_format!r}: allowed are text, json"
        )
    if cfg.log_level not in ("debug", "info", "warning", "error"):
        raise LanesError(
            BAD_ARGUMENT,
            f"{at('log_level')} = {cfg.log_level!r}: allowed are debug, info, warning, error",
        )
    if cfg.deadline_rule not in ("start", "finish"):
        raise LanesError(
            BAD_ARGUMENT,
            f"{at('deadline_rule')} = {cfg.deadline_rule!r}: allowed are start, finish",
        )
    if cfg.arbiter is not None and not (
        cfg.arbiter.startswith("unix:") and len(cfg.arbiter) > len("unix:")
    ):
        raise LanesError(
            BAD_ARGUMENT,
            f"{at('arbiter')} = {cfg.arbiter!r}: must be unix:PATH (a lanes arbiter socket)",
        )
    if cfg.arbiter_fallback not in ("fail_open", "fail_closed"):
        raise LanesError(
            BAD_ARGUMENT,
            f"{at('arbiter_fallback')} = {cfg.arbiter_fallback!r}: "
            "allowed are fail_open, fail_closed",
        )
    if not 0 < cfg.max_body_mb <= 4096:
        raise LanesError(
            BAD_ARGUMENT, f"{at('max_body_mb')} = {cfg.max_body_mb}: must be in (0, 4096]"
        )
    if not 1 <= cfg.max_connections <= 1_000_000:
        raise LanesError(
            BAD_ARGUMENT, f"{at('max_connections')} = {cfg.max_connections}: must be 1..1000000"
        )
    for key in ("header_timeout", "body_timeout", "grpc_keepalive"):
        seconds = getattr(cfg, key)
        if not 0.001 <= seconds <= 86_400:
            raise LanesError(BAD_ARGUMENT, f"{at(key)} = {seconds}: must be 0.001..86400 seconds")
    if not 8 <= cfg.max_header_kb <= 1024:
        raise LanesError(
            BAD_ARGUMENT, f"{at('max_header_kb')} = {cfg.max_header_kb}: must be 8..1024"
        )
    if cfg.policy not in ("independent", "auto"):
        from lanes._core import Scheduler

        try:
            Scheduler(cfg.policy, [1])
        except LanesError as err:
            raise LanesError(
                err.code,
                f"{at('policy')} = {cfg.policy!r}: {err.message} (serve allows {POLICIES})",
            ) from None
    from lanes.serving.devices import cuda_counter, parse_devices

    parse_devices(
        cfg.devices, threads=cfg.cpu_threads, cuda_available=cuda_counter(cfg.zoo_backend)
    )
    if cfg.models is not None and not cfg.models.is_dir():
        raise LanesError(
            BAD_ARGUMENT,
            f"{at('models')} = '{cfg.models}': not a folder (a model repository is a folder)",
        )
    return cfg


def read_file(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text())
    except OSError as err:
        raise LanesError(CONFIG_INVALID, f"--config {path}: {err.strerror}") from None
    except tomllib.TOMLDecodeError as err:
        raise LanesError(CONFIG_INVALID, f"--config {path}: not valid TOML: {err}") from None
    table = data.get("serve", data)
    if not isinstance(table, dict):
        raise LanesError(CONFIG_INVALID, f"--config {path}: [serve] must be a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise LanesError(
            CONFIG_INVALID,
            f"--config {path}: unknown key '{unknown[0]}'; allowed: {', '.join(sorted(_KEYS))}",
        )
    return {k: _convert(k, v, f"{path}: ") for k, v in table.items()}


def resolve(
    cli: dict[str, Any], file: Path | None = None, env: dict[str, str] | None = None
) -> ServeConfig:
    """CLI values (None: not given) over environment over file over defaults, checked."""
    env = dict(os.environ) if env is None else env
    cfg = ServeConfig()
    origin: dict[str, str] = {}
    if file is not None:
        from_file = read_file(file)
        cfg = replace(cfg, **from_file)
        origin.update((k, f"{file}: {k}") for k in from_file)
    from_env = {
        k: _convert(k, env[f"LANES_SERVE_{k.upper()}"], f"LANES_SERVE_{k.upper()}: ")
        for k in _KEYS
        if f"LANES_SERVE_{k.upper()}" in env
    }
    cfg = replace(cfg, **from_env)
    origin.update((k, f"LANES_SERVE_{k.upper()}") for k in from_env)
    given = {k: _convert(k, v, "--") for k, v in cli.items() if v is not None and k in _KEYS}
    origin.update((k, "--" + k.replace("_", "-")) for k in given)
    return check(replace(cfg, **given), origin)
