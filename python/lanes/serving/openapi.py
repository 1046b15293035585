"""The OpenAPI document of ``lanes serve``'s REST API (``GET /v2/openapi.json``).

The file ships in this package (:data:`OPENAPI_FILE`); the native server embeds the same bytes
at build time, and tests compare what it serves against this copy.
"""

from __future__ import annotations

import functools
from importlib import resources

OPENAPI_FILE = "openapi.json"
"""The OpenAPI document of the REST API, a file of this package."""


@functools.cache
def openapi_document() -> bytes:
    """The OpenAPI document (:data:`OPENAPI_FILE`), read once."""
    return resources.files("lanes.serving").joinpath(OPENAPI_FILE).read_bytes()
