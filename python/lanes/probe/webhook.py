"""Posts probe events to a URL from a thread of its own, so a slow or dead receiver never holds
up probing.

The rule: :meth:`Webhook.post` only queues (at most ``capacity`` events; when the queue is full
the oldest event is dropped and counted). The thread POSTs each event as one JSON object
(``Content-Type: application/json``) with a ``timeout`` per attempt. A 2xx answer is success; a
connection error, a timeout, 429 or 5xx is retried after 0.5 s, 1 s, 2 s, ... (doubling) up to
``retries`` times, then the event is counted failed; other answers fail at once.
:meth:`Webhook.close` lets the queue drain for at most ``drain_s`` seconds, then gives up on the
rest (counted dropped).
"""

from __future__ import annotations

import contextlib
import json
import queue
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from lanes.errors import BAD_ARGUMENT, LanesError

_STOP = object()


@dataclass
class WebhookStats:
    """Counts of a webhook's deliveries."""

    delivered: int = 0
    failed: int = 0
    dropped: int = 0
    last_error: str | None = None


class Webhook:
    """A bounded, retrying, non-blocking poster of JSON objects (module docs)."""

    def __init__(
        self,
        url: str,
        *,
        capacity: int = 10_000,
        retries: int = 3,
        timeout: float = 2.0,
        backoff: float = 0.5,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise LanesError(
                BAD_ARGUMENT, f"--webhook must be an http:// or https:// URL, not {url!r}"
            )
        self.url = url
        self.retries = retries
        self.timeout = timeout
        self.backoff = backoff
        self.stats = WebhookStats()
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=capacity)
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._work, name="lanes-probe-webhook", daemon=True)
        self._thread.start()

    def post(self, payload: dict[str, Any]) -> None:
        """Queues ``payload``; never blocks (drops the oldest queued event when full)."""
        while True:
            try:
                self._queue.put_nowait(payload)
                return
            except queue.Full:
                try:
                    self._queue.get_nowait()
                    with self._lock:
                        self.stats.dropped += 1
                except queue.Empty:
                    pass

    def close(self, drain_s: float = 5.0) -> WebhookStats:
        """Waits up to ``drain_s`` seconds for queued events to go out, then stops."""
        deadline = time.monotonic() + drain_s
        with contextlib.suppress(queue.Full):
            self._queue.put(_STOP, timeout=max(0.0, drain_s))
        self._thread.join(max(0.0, deadline - time.monotonic()))
        self._closing.set()
        self._thread.join(1.0)
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not _STOP:
                with self._lock:
                    self.stats.dropped += 1
        return self.stats

    def _deliver(self, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        delay = self.backoff
        for attempt in range(self.retries + 1):
            if attempt > 0:
                if self._closing.wait(delay):
                    break
                delay *= 2
            request = urllib.request.Request(
                self.url,
                data=body,
                method="POST",
                headers={"Content-Type": "application/json", "User-Agent": "lanes-probe"},
            )
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    response.read()
                with self._lock:
                    self.stats.delivered += 1
                return
            except urllib.error.HTTPError as e:
                error = f"HTTP {e.code}"
                if e.code != 429 and e.code < 500:
                    break
            except (OSError, ValueError) as e:
                error = str(e)
            with self._lock:
                self.stats.last_error = error
        with self._lock:
            self.stats.failed += 1

    def _work(self) -> None:
        while not self._closing.is_set():
            item = self._queue.get()
            if item is _STOP:
                return
            self._deliver(item)
