"""``lanes bench URL --profile PID|COMMAND``: one load run with the server diagnosed under it.

Target rule: a whole number is a PID (it must exist; its descendants are profiled with it);
anything else is a command line (split like a shell would) started here in its own session,
waited for until URL's host and port accept a TCP connection (at most ``READY_S``), profiled,
and stopped at the end with its process group (SIGTERM, then SIGKILL). The profile window is
the whole load run. The findings print after the load report; the files (docs/diagnosis.md)
go to ``--profile-out``. A profiler that fails costs the diagnosis, never the load result.
"""

from __future__ import annotations

import argparse
import shlex
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lanes.errors import BAD_ARGUMENT, LanesError

if TYPE_CHECKING:
    from lanes.bench.result import Result

READY_S = 60.0


def _wait_port(url: str, proc: subprocess.Popen[bytes], argv: list[str]) -> None:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or parts.hostname is None:
        raise LanesError(BAD_ARGUMENT, f"--profile COMMAND needs an http URL to wait on, not {url}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LanesError(
                BAD_ARGUMENT, f"--profile {shlex.join(argv)}: exited ({proc.returncode}) at start"
            )
        try:
            with socket.create_connection((parts.hostname, port), timeout=1.0):
                return
        except OSError:
            time.sleep(0.1)  # polling a port with a deadline
    raise LanesError(
        BAD_ARGUMENT,
        f"--profile {shlex.join(argv)}: {parts.hostname}:{port} not open in {READY_S:g} s",
    )


def run_profiled(args: argparse.Namespace, run: Callable[..., int]) -> int:
    """Run the load of ``args`` with ``args.profile`` diagnosed (see the module docstring)."""
    from lanes.diagnose.config import ProfileConfig
    from lanes.diagnose.session import Session, check_pid

    target: str = args.profile.strip()
    proc: subprocess.Popen[bytes] | None = None
    if target.isdigit():
        pid = int(target)
        check_pid(pid)
    else:
        argv = shlex.split(target)
        if not argv:
            raise LanesError(BAD_ARGUMENT, "--profile: give a PID or a command line")
        try:
            proc = subprocess.Popen(argv, start_new_session=True, stdin=subprocess.DEVNULL)
        except OSError as err:
            raise LanesError(
                BAD_ARGUMENT, f"--profile {target}: cannot start: {err.strerror or err}"
            ) from None
        pid = proc.pid
    folder = args.profile_out or Path(f"lanes-profile-{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        if proc is not None:
            _wait_port(args.url, proc, argv)
        cfg = ProfileConfig(rate_hz=args.profile_rate, native=args.profile_native)
        session = Session(cfg, pid, folder)
        session.window(time.time(), None)
        found: dict[str, Any] = {}

        def after(result: Result) -> None:
            found.update(
                session.finish(
                    requests=result.requests,
                    dispersion=result.dispersion(10),
                    arrival=args.arrival if args.rate is not None else "closed loop",
                    late_sends=result.late_sends_fraction if args.rate is not None else None,
                )
            )

        code = run(args, after)
    finally:
        if proc is not None:
            from lanes.lab.runner import stop_process_group

            stop_process_group(proc)
    _print(found, folder, pid)
    return code


def _print(diagnosis: dict[str, Any], folder: Path, pid: int) -> None:
    out = sys.stdout
    print(f"  Diagnosis of pid {pid} ({folder}):", file=out)
    for f in diagnosis.get("findings", []):
        print(f"    [{f['code']}] {f['message']}", file=out)
    if not diagnosis.get("findings"):
        print("    no finding", file=out)
    calls = diagnosis.get("syscalls_per_request") or {}
    if calls:
        top = ", ".join(f"{k} {v:g}" for k, v in list(calls.items())[:6])
        print(f"    syscalls per request: {top}", file=out)
    busy = diagnosis.get("core_busy")
    if busy:
        print("    core busy: " + ", ".join(f"{b:.0%}" for b in busy), file=out)
    threads = diagnosis.get("threads")
    if threads:
        print(
            f"    threads: {threads['first']} -> {threads['last']} (peak {threads['peak']})",
            file=out,
        )
    for name, svg in (diagnosis.get("flamegraphs") or {}).items():
        print(f"    flame graph {name}: {folder / svg}", file=out)
    for line in diagnosis.get("skipped", []):
        print(f"    skipped: {line}", file=out)
