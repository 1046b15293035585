"""Planted fault: a blocking file call on the event loop.

Every request reads the service's hot-word dictionary from a file under a shared ``flock``, on
the event-loop thread, with plain blocking calls. A trainer thread of the same service rewrites
that dictionary under an exclusive ``flock`` and holds it while the new version reaches storage
(NFS in the field, modelled here as a wait of ``HOLD_S`` with the lock held, then a short gap).
Whenever a request arrives during a rewrite, ``fcntl.flock`` puts the whole loop to sleep until
the trainer lets go: the loop is off-CPU in a file call while every other connection waits
behind it, and the CPU stays mostly idle.

Why it is realistic: the hot-word service of ../shared/background/flamegraph-hotword-service.txt
served 16 req/s with 6 workers and idle CPUs; its off-CPU flame graph showed three blocking
calls in the event loop -- ``posix.access`` and the file writes of ``semantic.so`` to NFS -- that
took 53 % of the blocked time. The loop is blocked here for real (a kernel lock wait on a real
file), not by ``time.sleep``; how long depends only on the trainer's hold and the request rate,
so the fault is the same on any Linux. At 150 req/s the loop spends roughly a third of the wall
time in ``flock``.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import threading
from pathlib import Path

import common
from aiohttp import web

HOLD_S = 0.012
"""How long each rewrite holds the exclusive lock (the storage round trip)."""
GAP_S = 0.004
"""The pause between two rewrites."""


class Dictionary:
    """The hot-word file, rewritten by a trainer thread, read by every request."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "hotwords.json"
        self.path.write_text(json.dumps({"version": 0, "words": ["zoo"]}))
        self._stop = threading.Event()
        self._trainer = threading.Thread(target=self._train, name="trainer", daemon=True)
        self._trainer.start()

    def _train(self) -> None:
        version = 0
        with open(self.path, "r+b") as f:
            while not self._stop.is_set():
                version += 1
                fcntl.flock(f, fcntl.LOCK_EX)
                try:
                    f.seek(0)
                    f.write(json.dumps({"version": version, "words": ["zoo", "lab"]}).encode())
                    f.truncate()
                    f.flush()
                    self._stop.wait(HOLD_S)  # the storage round trip, lock held
                finally:
                    fcntl.flock(f, fcntl.LOCK_UN)
                self._stop.wait(GAP_S)

    def read(self) -> dict[str, object]:
        """The dictionary as it is now: a blocking shared-lock read (the fault when called on
        the loop)."""
        fd = os.open(self.path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            data = os.read(fd, 1 << 16)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
        doc: dict[str, object] = json.loads(data or b"{}")
        return doc

    def stop(self) -> None:
        self._stop.set()
        self._trainer.join(timeout=1.0)


def main() -> None:
    port = common.port_from_args(__doc__)
    with tempfile.TemporaryDirectory(prefix="zoo-hotwords-") as folder:
        words = Dictionary(Path(folder))

        async def handle(request: web.Request) -> web.Response:
            body = await request.read()
            words.read()  # the planted fault: a blocking file call on the loop thread
            return common.json_response(common.infer(body))

        try:
            common.serve(common.app(handle), port)
        finally:
            words.stop()


if __name__ == "__main__":
    main()
