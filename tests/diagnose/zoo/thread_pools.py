"""Planted fault: a native library that starts a thread pool per calling thread (OMP-style
growth).

Each request runs on a fresh thread (an unbounded thread-per-task executor), and that thread
calls the model through :class:`NativeLibrary`, a stand-in for xgboost's C library on OpenMP:
the first call from a thread starts a team of ``os.cpu_count()`` worker threads for that thread
(``omp_get_max_threads()``), runs the parallel region on it and keeps the team parked for the
thread's next call. The library never shuts a team down -- the C side does not know the calling
thread has gone -- so the process gains a team per request and its thread count grows with the
requests served, far past the cores, every parked thread holding a stack.

Why it is realistic: in ../shared/background/online-service-optimization.txt a JVM service that
should have had under 50 threads ran 800: every JVM thread that called xgboost's ``predict``
got its own team of ``omp_get_num_threads`` libomp threads, and the service's fork-join pools,
unbounded at first, kept adding callers as load rose. ``ls /proc/PID/task | wc -l`` showed it;
``OMP_THREAD_LIMIT=1`` fixed it.
"""

from __future__ import annotations

import asyncio
import os
import queue
import threading
from collections.abc import Callable

import common
from aiohttp import web

Job = Callable[[], object]


class Team:
    """An OpenMP-style team: ``size`` threads parked on a queue (waiting for work) between
    parallel regions."""

    def __init__(self, size: int) -> None:
        self._jobs: queue.Queue[tuple[Job, queue.Queue[object]]] = queue.Queue()
        for i in range(size):
            threading.Thread(target=self._work, name=f"omp-{i}", daemon=True).start()

    def _work(self) -> None:
        while True:
            job, done = self._jobs.get()
            done.put(job())

    def parallel(self, jobs: list[Job]) -> list[object]:
        """Run ``jobs`` on the team and return their results in order."""
        done: list[queue.Queue[object]] = []
        for job in jobs:
            box: queue.Queue[object] = queue.Queue(maxsize=1)
            self._jobs.put((job, box))
            done.append(box)
        return [box.get() for box in done]


class NativeLibrary:
    """The stand-in for a native model library on OpenMP: one team per calling thread, kept
    forever in the library's own table (the planted fault)."""

    def __init__(self) -> None:
        self._threads = os.cpu_count() or 1
        self._local = threading.local()
        self._teams: list[Team] = []  # the C library's table: never shrinks
        self._lock = threading.Lock()

    def predict(self, body: bytes) -> bytes:
        team = getattr(self._local, "team", None)
        if team is None:
            team = Team(self._threads)
            self._local.team = team
            with self._lock:
                self._teams.append(team)
        x = common.request_input(body)
        rows = team.parallel([lambda: common.predict(x, 1) for _ in range(self._threads)])
        y = rows[0]
        assert isinstance(y, list)
        return common.reply(y)


class ThreadPerTask:
    """An unbounded executor: a dispatcher thread starts a new thread for every task, so the
    event loop only enqueues (it never waits in ``Thread.start``)."""

    def __init__(self) -> None:
        self._inbox: queue.Queue[Callable[[], None]] = queue.Queue()
        threading.Thread(target=self._dispatch, name="dispatcher", daemon=True).start()

    def _dispatch(self) -> None:
        while True:
            task = self._inbox.get()
            threading.Thread(target=task, name="request", daemon=True).start()

    def submit(self, fn: Callable[[], bytes]) -> asyncio.Future[bytes]:
        """Run ``fn`` on a new thread; a future of its result on the running loop."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bytes] = loop.create_future()

        def run() -> None:
            try:
                out = fn()
            except BaseException as err:  # handed to the awaiting request
                loop.call_soon_threadsafe(future.set_exception, err)
            else:
                loop.call_soon_threadsafe(future.set_result, out)

        self._inbox.put_nowait(run)
        return future


def main() -> None:
    port = common.port_from_args(__doc__)
    lib = NativeLibrary()
    tasks = ThreadPerTask()

    async def handle(request: web.Request) -> web.Response:
        body = await request.read()
        return common.json_response(await tasks.submit(lambda: lib.predict(body)))

    common.serve(common.app(handle), port)


if __name__ == "__main__":
    main()
