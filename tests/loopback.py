"""Real loopback HTTP servers for the load engine's tests (no mocks).

:func:`serve` runs a :class:`http.server.ThreadingHTTPServer` on ``127.0.0.1``, port 0, from a
background thread: HTTP/1.1 keep-alive, every GET and POST answered with one fixed status and a
small body with ``Content-Length``, request bodies read by ``Content-Length``. The
:class:`Server` it yields records every request it saw (method, path, headers, body) in a
thread-safe list, in arrival order. The fixtures built on it (``http_server``,
``status_server``, ``closed_port``) are in ``tests/conftest.py``, shared by ``tests/bench`` and
``tests/cli``.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REPLY = b"ok\n"
"""The body every test server answers with."""


@dataclass(frozen=True)
class Seen:
    """One request as the server read it; header names in lower case."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Server:
    """A running test server and what it saw."""

    port: int
    status: int
    _seen: list[Seen] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT/``."""
        return f"http://127.0.0.1:{self.port}/"

    def record(self, seen: Seen) -> None:
        with self._lock:
            self._seen.append(seen)

    @property
    def seen(self) -> list[Seen]:
        """A copy of every request seen so far, in arrival order."""
        with self._lock:
            return list(self._seen)

    @property
    def count(self) -> int:
        """Requests seen so far."""
        with self._lock:
            return len(self._seen)

    @property
    def paths(self) -> list[str]:
        """The path of every request seen so far, in arrival order."""
        return [s.path for s in self.seen]


def _handler(server: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body leave in two writes; with Nagle's algorithm on, the second waits
        # for the client's delayed ACK (about 40 ms a request).
        disable_nagle_algorithm = True

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            server.record(Seen(self.command, self.path, headers, body))
            self.send_response(server.status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(REPLY)))
            self.end_headers()
            self.wfile.write(REPLY)

        def do_GET(self) -> None:
            self._answer()

        def do_POST(self) -> None:
            self._answer()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # The engine opens all its connections at once (64 by default in open loop); beyond the
    # default listen backlog of 5, connections wait a second for a SYN retry.
    request_queue_size = 256

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-reply (a bounded load test ending while a connection
        still waits for its answer) is how such a test ends, not an error: it is not printed.
        Any other exception is, as the standard server prints it."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


@contextmanager
def serve(status: int = 200) -> Iterator[Server]:
    """A server answering ``status``, running until the block ends."""
    server = Server(port=0, status=status)
    httpd = _HTTPServer(("127.0.0.1", 0), _handler(server))
    server.port = int(httpd.server_address[1])
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def free_port() -> int:
    """A loopback port that was bound and released: nothing listens there."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
