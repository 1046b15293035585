"""Planted fault: a logging lock that every request contends on.

The event loop hands each request to a pool of ``WORKERS`` threads (as Starlette and FastAPI do
with plain ``def`` endpoints). Every request logs its access line, its payload and its result
through one ``logging`` handler, and the handler holds its lock while it formats, writes and
flushes each record to disk (``os.fsync``: the audit log must survive a crash). While one thread
waits for the disk with the lock held, the others finish their model call and queue on the same
lock: every request parks on a futex, and the profile's off-CPU time of the workers sits in the
handler's ``acquire``.

Why it is realistic: in ../shared/background/production-performance-analysis.txt a Node service
topped out at 7000 req/s with one core busy; ``strace -c`` showed futex taking 30 % of the
master's time, and the futex calls followed every log line, because log4js in cluster mode
forwards each worker's log record to the master. Removing the per-request logging took it to
17500 req/s. Python's ``logging`` handlers serialise every record on one lock in the same way.
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import common
from aiohttp import web

WORKERS = 4
"""Request threads; a small fixed pool, so threads stay well under any "too many" bound."""


class DurableFileHandler(logging.FileHandler):
    """A file handler whose flush also reaches the disk; it runs under the handler's lock."""

    def flush(self) -> None:
        self.acquire()
        try:
            if self.stream is not None:
                self.stream.flush()
                os.fsync(self.stream.fileno())
        finally:
            self.release()


def logger(path: Path) -> logging.Logger:
    """The service's request log: every record goes through one handler, one lock."""
    log = logging.getLogger("zoo.requests")
    log.setLevel(logging.INFO)
    handler = DurableFileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(threadName)s %(message)s"))
    log.addHandler(handler)
    log.propagate = False
    return log


def main() -> None:
    port = common.port_from_args(__doc__)
    pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="worker")
    with tempfile.TemporaryDirectory(prefix="zoo-log-") as folder:
        log = logger(Path(folder) / "requests.log")

        def work(body: bytes, peer: str) -> bytes:
            log.info("POST %s from %s", common.INFER_PATH, peer)  # the planted fault
            log.info("payload %s", body.decode(errors="replace"))
            out = common.infer(body)
            log.info("result %s", out.decode())
            return out

        async def handle(request: web.Request) -> web.Response:
            body = await request.read()
            loop = asyncio.get_running_loop()
            out = await loop.run_in_executor(pool, work, body, str(request.remote))
            return common.json_response(out)

        try:
            common.serve(common.app(handle), port)
        finally:
            pool.shutdown(wait=True)


if __name__ == "__main__":
    main()
