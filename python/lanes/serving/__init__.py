"""``lanes serve``: the inference server.

- :mod:`~lanes.serving.config` — the one typed configuration;
- :mod:`~lanes.serving.codec` — KServe v2 wire format (JSON and binary tensors);
- :mod:`~lanes.serving.batcher` — per-model queues and late batch formation;
- :mod:`~lanes.serving.dispatcher` — the policy engine driving devices;
- :mod:`~lanes.serving.devices` — CPU, CUDA and simulated devices;
- :mod:`~lanes.serving.app` — HTTP routes; :mod:`~lanes.serving.server` — lifecycle.
"""

from lanes.serving.config import ServeConfig
from lanes.serving.server import Handle, Server, serve, start_in_thread

__all__ = ["Handle", "ServeConfig", "Server", "serve", "start_in_thread"]
