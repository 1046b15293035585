"""Planted fault: a logging lock that every request contends on.

The event loop hands each request to a pool of ``WORKERS`` threads (as Starlette and FastAPI do
with plain ``def`` endpoints). Every request logs its access line, its payload and its result
through one ``logging`` handler, an audit handler that ships each record to a log collector
process and waits for its acknowledgement (the audit log must survive a crash of the service).
The handler holds its lock for the whole round trip, so while one thread waits for the
collector the others finish their model call and queue on the same lock: every request parks
on a futex, and the profile's off-CPU time of the workers sits in the handler's ``acquire``.

The collector takes ``ACK_MS`` to store a record before it acknowledges, a fixed time so the
fault does not rest on the test host's disk (an ``fsync`` per record, the first version of this
service, costs nothing where the temporary folder is a tmpfs, and the lock was then free).

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
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import common
from aiohttp import web

WORKERS = 4
"""Request threads; a small fixed pool, so threads stay well under any "too many" bound."""
ACK_MS = 1.0
"""The collector's time to store one record before it acknowledges it."""


def collector(conn: socket.socket) -> None:
    """The log collector: stores each line (``ACK_MS``) and acknowledges it, until EOF."""
    with conn, conn.makefile("rb") as lines:
        for _ in lines:
            time.sleep(ACK_MS / 1000)
            conn.sendall(b"ok\n")


class AuditHandler(logging.Handler):
    """Ships each formatted record to the collector and waits for its acknowledgement, all
    under the handler's lock (``Handler.handle`` holds it around ``emit``)."""

    def __init__(self, conn: socket.socket) -> None:
        super().__init__()
        self.conn = conn
        self.acks = conn.makefile("rb")

    def emit(self, record: logging.LogRecord) -> None:
        self.conn.sendall(self.format(record).encode(errors="replace") + b"\n")
        if self.acks.readline() != b"ok\n":
            raise ConnectionError("the log collector went away")


def logger(conn: socket.socket) -> logging.Logger:
    """The service's request log: every record goes through one handler, one lock."""
    log = logging.getLogger("zoo.requests")
    log.setLevel(logging.INFO)
    handler = AuditHandler(conn)
    handler.setFormatter(logging.Formatter("%(asctime)s %(threadName)s %(message)s"))
    log.addHandler(handler)
    log.propagate = False
    return log


def main() -> None:
    port = common.port_from_args(__doc__)
    ours, theirs = socket.socketpair()
    if os.fork() == 0:  # before any thread starts; the child is the collector
        ours.close()
        collector(theirs)
        os._exit(0)
    theirs.close()
    log = logger(ours)
    pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="worker")

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
        ours.close()  # the collector reads EOF and exits


if __name__ == "__main__":
    main()
