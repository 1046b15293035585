"""One fleet member: a Ray actor that owns one real ``lanes serve`` process on its node.

Why a subprocess and not ``serve()`` inside the actor: ``lanes serve`` installs its own signal
handlers (drain on SIGTERM), owns its event loop, device threads and logging, and must be
killable on its own — a Ray worker process has Ray's threads and handlers in it already. The
actor is the supervisor Ray restarts; the server is the process that serves.

Life of a member (:class:`Member`):

1. ``__init__`` picks the port (a first start: the planned one; a restart: the one it had,
   or any free one if that is taken now), starts ``python -m lanes.fleet.member serve ...``,
   which asks the kernel to SIGKILL it when the actor's thread dies (``PR_SET_PDEATHSIG``)
   and then becomes ``lanes serve`` (``exec``), so no server outlives its actor.
2. It waits for the start-up line (``lanes serve: http://... · metrics :P ...``), then for
   ``GET /v2/health/ready`` to answer 200, then reports the URL to the fleet's registry. If the
   server exits first, or is not ready within ``ready_timeout_s``, ``__init__`` raises: Ray
   does not restart an actor whose constructor failed, so a bad configuration fails ``up`` once
   instead of looping.
3. A watcher thread waits on the process and checks readiness every ``health_interval_s``. If
   the server exits (a crash, a SIGKILL) or fails ``unhealthy_after`` checks in a row after it
   was ready, the watcher kills the server and ends the actor's process with ``os._exit(1)``:
   to Ray that is an actor that died, which it restarts (up to ``max_restarts``) on the same
   node, where step 1 runs again. (``ray.actor.exit_actor()`` would be an intentional exit,
   which Ray never restarts.)
4. :meth:`Member.stop` (``lanes fleet down``) marks the exit as wanted and drains the server
   with SIGTERM, then SIGKILL after the drain timeout.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import Any

from lanes.fleet.config import automatic_devices

STARTUP = re.compile(r"lanes serve: (http://\S+) · (?:metrics :(\d+)|metrics off)")
"""The start-up line ``lanes serve`` prints on stderr once it is ready."""
BIND_FAILED = re.compile(r"address already in use|could not bind|os error 98", re.IGNORECASE)
_PR_SET_PDEATHSIG = 1
_TAIL_LINES = 40


def ready(url: str, timeout: float) -> bool:
    """Whether ``GET url/v2/health/ready`` answers 200 within ``timeout`` seconds."""
    try:
        with urllib.request.urlopen(f"{url}/v2/health/ready", timeout=timeout) as response:
            return int(response.status) == 200
    except (OSError, urllib.error.URLError):
        return False


class Server:
    """A ``lanes serve`` child process and what it said on stderr."""

    def __init__(self, argv: list[str]) -> None:
        env = dict(os.environ, LANES_FLEET_PARENT=str(os.getpid()), PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lanes.fleet.member", "serve", *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.tail: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)
        self.url: str | None = None
        self.metrics_port: int | None = None
        self.announced = threading.Event()
        threading.Thread(target=self._read, name="lanes-fleet-stderr", daemon=True).start()

    def _read(self) -> None:
        """Keep the last lines of stderr, pass them on to the actor's log, spot the URL."""
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            self.tail.append(line)
            print(line, file=sys.stderr, flush=True)
            match = STARTUP.search(line)
            if match and self.url is None:
                self.url = match.group(1)
                self.metrics_port = int(match.group(2)) if match.group(2) else None
                self.announced.set()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10.0)  # stderr closed: it is exiting; have its status
        self.announced.set()  # the process ended: whoever waits must look at it

    def last_words(self) -> str:
        """The last non-empty stderr line (a ``lanes serve: error: ...`` line if it failed)."""
        lines = [line for line in self.tail if line.strip()]
        return lines[-1] if lines else "(no output)"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class Member:
    """The actor (wrapped with ``ray.remote`` by :mod:`lanes.fleet.control`)."""

    def __init__(self, registry_name: str, slot: dict[str, Any], settings: dict[str, Any]) -> None:
        import ray

        self.index = int(slot["index"])
        self.settings = settings
        self.stopping = False
        self.healthy = False
        registry = ray.get_actor(registry_name, namespace="lanes")
        self.registry = registry
        previous = ray.get(registry.previous_port.remote(self.index))
        host = settings["host"]
        if host == "node":
            host = slot["node_ip"]  # the node's address as Ray knows it
        devices = slot["devices"]
        if automatic_devices(devices) and slot["gpus"]:
            gpus = ray.get_runtime_context().get_accelerator_ids().get("GPU", [])
            devices = ",".join(f"cuda:{i}" for i in range(len(gpus)))  # CUDA_VISIBLE_DEVICES
        # A restart asks for its old port, else any; a first start for the planned one only.
        ports = [int(slot["port"])] if previous is None else list(dict.fromkeys((previous, 0)))
        self.server = self._start(settings["serve_argv"], devices, host, ports)
        url = self.server.url
        assert url is not None
        self.url = url
        self.healthy = True
        ray.get(
            registry.started.remote(
                self.index,
                {
                    "url": url,
                    "metrics_port": self.server.metrics_port,
                    "pid": self.server.proc.pid,
                    "devices": devices,
                    "node_id": ray.get_runtime_context().get_node_id(),
                    "node_ip": slot["node_ip"],
                },
            )
        )
        threading.Thread(target=self._watch, name="lanes-fleet-watch", daemon=True).start()

    def _start(self, serve_argv: list[str], devices: str, host: str, ports: list[int]) -> Server:
        """Start the server on the first port that binds; raise if it never becomes ready."""
        timeout = float(self.settings["ready_timeout_s"])
        deadline = time.monotonic() + timeout
        for port in ports:
            argv = ["--host", host, "--port", str(port), "--devices", devices, *serve_argv]
            server = Server(argv)
            server.announced.wait(max(0.0, deadline - time.monotonic()))
            while server.url is not None and time.monotonic() < deadline:
                if ready(server.url, timeout=2.0):
                    return server
                if server.proc.poll() is not None:
                    break
                time.sleep(0.05)
            status = server.proc.poll()
            server.kill()
            if status is None:
                break  # still running, never ready: the deadline passed
            if port != 0 and BIND_FAILED.search("\n".join(server.tail)):
                continue  # the old port is taken now: any free one will do
            raise RuntimeError(f"lanes serve exited with status {status}: {server.last_words()}")
        raise RuntimeError(f"lanes serve not ready within {timeout:g} s")

    def _watch(self) -> None:
        """Die with the server, so Ray restarts this member (see the module overview)."""
        interval = float(self.settings["health_interval_s"])
        limit = int(self.settings["unhealthy_after"])
        failures = 0
        proc = self.server.proc
        while True:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=interval)
            if self.stopping:
                return
            if proc.returncode is not None:
                self._die(f"lanes serve exited with status {proc.returncode}")
            ok = ready(self.url, timeout=max(1.0, 2 * interval))
            failures = 0 if ok else failures + 1
            if ok != self.healthy and not self.stopping:
                self.healthy = ok
                self.registry.health.remote(self.index, ok)
            if failures >= limit and not self.stopping:
                self._die(f"lanes serve failed {failures} readiness checks in a row")

    def _die(self, why: str) -> None:
        print(f"lanes fleet: member {self.index}: {why}; exiting for Ray to restart it",
              file=sys.stderr, flush=True)  # fmt: skip
        self.server.kill()
        import ray

        with contextlib.suppress(Exception):  # best effort: the registry may be gone too
            ray.get(self.registry.health.remote(self.index, False), timeout=2.0)
        os._exit(1)

    def info(self) -> dict[str, Any]:
        """What ``lanes fleet status`` shows: URL, server pid, readiness checked now."""
        return {
            "index": self.index,
            "url": self.url,
            "pid": self.server.proc.pid,
            "ready": ready(self.url, timeout=2.0),
            "metrics_port": self.server.metrics_port,
        }

    def stop(self, drain_timeout: float) -> int | None:
        """Drain the server (SIGTERM), SIGKILL it after ``drain_timeout`` s; its exit status."""
        self.stopping = True
        proc = self.server.proc
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=drain_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return proc.returncode


def exec_server(argv: list[str]) -> None:
    """Become ``lanes ARGV``, to be SIGKILLed when the parent actor's thread dies."""
    parent = int(os.environ.pop("LANES_FLEET_PARENT", "0"))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if parent and os.getppid() != parent:  # the parent died before prctl took effect
        sys.exit(1)
    os.execv(sys.executable, [sys.executable, "-m", "lanes", *argv])


if __name__ == "__main__":
    exec_server(sys.argv[1:])
