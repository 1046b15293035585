"""A local multi-node Ray cluster for tests, as Ray's own tests run one: a head and worker nodes
in this host, every one on 127.0.0.1 with one CPU and no dashboard.

Importing this module sets ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` before Ray is imported:
Ray otherwise swaps a loopback address for the host's outward IP, where nothing listens. A test
module imports ``ray`` through here and fails, not skips, without it when
``LANES_REQUIRE_RAY=1`` (as ``make test`` sets); elsewhere it skips.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")


def require_ray() -> Any:
    """The ``ray`` module; without it the calling test module is skipped, unless
    ``LANES_REQUIRE_RAY=1``: then it fails."""
    try:
        import ray
    except ImportError:
        if os.environ.get("LANES_REQUIRE_RAY") == "1":
            raise
        pytest.skip("ray is not installed (pip install 'lanes[ray]')", allow_module_level=True)
    return ray


@contextmanager
def local_cluster(workers: int = 2) -> Iterator[str]:
    """A head and ``workers`` worker nodes; yields the GCS address. At the end this process
    leaves Ray and every node is shut down."""
    import ray
    from ray.cluster_utils import Cluster

    c = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "node_ip_address": "127.0.0.1", "include_dashboard": False},
    )
    try:
        for _ in range(workers):
            c.add_node(num_cpus=1, node_ip_address="127.0.0.1")
        c.wait_for_nodes()
        yield str(c.address)
    finally:
        if ray.is_initialized():
            ray.shutdown()
        c.shutdown()
