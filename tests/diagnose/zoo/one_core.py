"""Planted fault: all the work pinned to one core while the others idle.

A pre-fork server in the style of Node's cluster module and gunicorn: the master binds the
port and forks one worker process per core, each serving the shared socket with its own event
loop, each request costing ``CPU_S`` of model CPU (CPU time, so the demand is the same on a
fast machine and a slow one). The start-up pins the master to core 0 (``taskset -c 0`` in a
start script, a container's cpuset left on one CPU) and every worker inherits the mask, so all
of them share core 0: at a load one core cannot carry, core 0 saturates, requests queue, and
the other cores stay idle.

Why it is realistic: in ../shared/background/production-performance-analysis.txt a 4-core Node
service showed cpu0 above 90 % user+system while cpu1-3 idled; the team first suspected the
master of feeding one worker, checked that the four workers' CPU was equal, and read the
per-core figures under stepped load. The lab's per-core CPU series is what tells "one core
saturated, the rest idle" from "the service is CPU-bound".
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import time

import common
from aiohttp import web

CPU_S = 0.010
"""Model CPU time per request: one core carries at most 100 req/s of it."""
PINNED = {0}
"""The CPU set every process of the service inherits (the planted fault)."""


def infer(body: bytes) -> bytes:
    """The model, run until this thread has spent ``CPU_S`` of CPU on the request."""
    end = time.thread_time() + CPU_S
    x = common.request_input(body)
    y = common.predict(x, 1)
    while time.thread_time() < end:  # a clock read per ~0.4 ms of work
        y = common.predict(x, 4)
    return common.reply(y)


async def handle(request: web.Request) -> web.Response:
    return common.json_response(infer(await request.read()))


def worker(sock: socket.socket) -> None:
    """One worker process: its own event loop on the shared listening socket."""
    web.run_app(common.app(handle), sock=sock, print=None, access_log=None)


def main() -> None:
    port = common.port_from_args(__doc__)
    os.sched_setaffinity(0, PINNED)  # the planted fault: inherited by every worker
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(1024)
    children: list[int] = []
    for _ in range(os.cpu_count() or 1):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                worker(sock)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        children.append(pid)

    def stop(_signum: int, _frame: object) -> None:
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    status = 0
    for pid in children:
        _, code = os.waitpid(pid, 0)
        status = status or os.waitstatus_to_exitcode(code)
    sys.exit(1 if status else 0)


if __name__ == "__main__":
    main()
