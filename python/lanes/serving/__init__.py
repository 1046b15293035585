"""``lanes serve``: the inference server.

- :mod:`~lanes.serving.config` — the one typed configuration;
- :mod:`~lanes.serving.server` — lifecycle of the native data plane (``lanes._core``);
- :mod:`~lanes.serving.bridge` — Python models called by the native data plane;
- :mod:`~lanes.serving.warmup` — warm-up before ready;
- :mod:`~lanes.serving.devices` — CPU, CUDA and simulated devices;
- :mod:`~lanes.serving.logs` — the log setup of ``lanes serve``;
- :mod:`~lanes.serving.openapi` — the REST API's OpenAPI document;
- :mod:`~lanes.serving.codec` — the KServe v2 REST codec in Python (the client's side).
"""

from lanes.serving.config import ServeConfig
from lanes.serving.server import Handle, Server, serve, start_in_thread

__all__ = ["Handle", "ServeConfig", "Server", "serve", "start_in_thread"]
