"""``lanes serve``: the inference server.

- :mod:`~lanes.serving.config` — the one typed configuration;
- :mod:`~lanes.serving.server` — lifecycle of the native data plane (``lanes._core``);
- :mod:`~lanes.serving.bridge` — Python models called by the native data plane;
- :mod:`~lanes.serving.warmup` — warm-up before ready;
- :mod:`~lanes.serving.devices` — CPU, CUDA and simulated devices;
- with ``--arbiter`` only, until the native data plane takes grants from a daemon:
  :mod:`~lanes.serving.aio_server` (aiohttp), :mod:`~lanes.serving.app` (routes),
  :mod:`~lanes.serving.codec`, :mod:`~lanes.serving.batcher`, :mod:`~lanes.serving.dispatcher`.
"""

from lanes.serving.config import ServeConfig
from lanes.serving.server import Handle, Server, serve, start_in_thread

__all__ = ["Handle", "ServeConfig", "Server", "serve", "start_in_thread"]
