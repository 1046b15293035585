"""One profiled window: start every recorder, stop them, keep the evidence, name the causes.

A :class:`Session` profiles the process tree of one PID for one window of a load run.
:meth:`Session.window` runs the recorders on a background thread from a wall-clock start for
a duration (the runner's measurement window, so warm-up and drain are not profiled);
:meth:`Session.finish` waits for it, adds what the load client saw (requests completed, the
dispersion of its sends), applies the rules (:mod:`lanes.diagnose.findings`), renders the flame
graphs, writes ``profile.json`` into the session's folder and returns the run file's
``diagnosis`` block (docs/diagnosis.md).

Failure rule: profiling never costs the load run its results. A recorder that cannot start or
fails mid-run adds one line to ``skipped`` and the rest goes on; :meth:`finish` catches what
escapes and reports it the same way. Only a PID that does not exist when the session is made
raises (``LanesError("bad_argument")``): that is the user's input, said before any load runs.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from lanes.diagnose import findings as rules
from lanes.diagnose.config import ProfileConfig
from lanes.diagnose.sampler import Sampler
from lanes.diagnose.stacks import StackRecorder, parse_folded
from lanes.diagnose.syscalls import SyscallRecorder
from lanes.errors import BAD_ARGUMENT, LanesError
from lanes.files import write_text_atomic

TOP_SYSCALLS = 12
"""Syscalls kept in the run file's summary (all are in profile.json)."""


def check_pid(pid: int) -> None:
    """Raise one clear line when ``pid`` is not a live process."""
    import psutil

    if not psutil.pid_exists(pid):
        raise LanesError(BAD_ARGUMENT, f"profile pid {pid}: no such process")


class Session:
    """Profiles ``pid``'s tree into ``folder`` (created) as ``cfg`` asks."""

    def __init__(self, cfg: ProfileConfig, pid: int, folder: Path) -> None:
        check_pid(pid)
        self.cfg, self.pid, self.folder = cfg, pid, folder
        self.skipped: list[str] = []
        self._blocks: dict[str, Any] = {}
        self._thread: threading.Thread | None = None
        self._window: tuple[float, float | None] = (0.0, 0.0)
        self._end = threading.Event()

    def window(self, start_unix: float, duration_s: float | None) -> None:
        """Record from ``start_unix`` (wall clock) for ``duration_s`` (None: until
        :meth:`finish`), on a background thread."""
        self._window = (start_unix, duration_s)
        self._thread = threading.Thread(
            target=self._record, args=(start_unix, duration_s), name="lanes-profile", daemon=True
        )
        self._thread.start()

    def _record(self, start_unix: float, duration_s: float | None) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            from lanes.diagnose.tools import discover

            tools = discover()
            delay = start_unix - time.time()
            if delay > 0:
                time.sleep(delay)  # the measurement window's start
            sampler = Sampler(self.pid, self.cfg.interval_ms / 1000.0)
            stacks = StackRecorder(self.pid, self.folder, self.cfg.rate_hz, self.cfg.native, tools)
            from lanes.diagnose.sampler import process_tree

            pids = [p.pid for p in process_tree(self.pid)]
            calls = SyscallRecorder(pids, self.folder, tools, timed=self.cfg.syscall_time)
            sampler.start()
            if self.cfg.stacks:
                stacks.start()
            if self.cfg.syscalls:
                calls.start()
            if duration_s is None:
                self._end.wait()
            else:
                self._end.wait(max(0.0, start_unix + duration_s - time.time()))
            self._window = (start_unix, time.time() - start_unix)
            self._blocks["stacks"] = stacks.stop() if self.cfg.stacks else None
            self._blocks["syscalls"] = calls.stop() if self.cfg.syscalls else None
            self._blocks.update(sampler.stop())
            self.skipped += stacks.skipped + calls.skipped
        except Exception as err:
            self.skipped.append(f"profiling failed mid-run: {type(err).__name__}: {err}")

    def finish(
        self,
        *,
        requests: int,
        dispersion: float | None,
        arrival: str | None,
        late_sends: float | None = None,
    ) -> dict[str, Any]:
        """Analyse the window and return the run file's ``diagnosis`` block."""
        if self._thread is not None:
            if self._window[1] is None:
                self._end.set()
            self._thread.join(timeout=(self._window[1] or 0.0) + 120.0)
        try:
            return self._analyse(requests, dispersion, arrival, late_sends)
        except Exception as err:
            self.skipped.append(f"diagnosis failed: {type(err).__name__}: {err}")
            return {"findings": [], "skipped": self.skipped, "profile": None}

    def _folded(self, key: str) -> Counter[str] | None:
        stacks = self._blocks.get("stacks") or {}
        name = stacks.get(key)
        if not name:
            return None
        return parse_folded((self.folder / name).read_text(errors="replace"))

    def _analyse(
        self, requests: int, dispersion: float | None, arrival: str | None, late: float | None
    ) -> dict[str, Any]:
        cpu = self._blocks.get("cpu") or {}
        syscalls = self._blocks.get("syscalls")
        calls = syscalls["calls"] if syscalls else None
        counted = _counted_requests(requests, syscalls, self._window[1])
        ev = rules.Evidence(
            cores=int(cpu.get("cores") or 1),
            requests=counted,
            cpu=cpu.get("samples"),
            processes=self._blocks.get("processes"),
            oncpu=self._folded("oncpu"),
            every=self._folded("all"),
            syscalls=calls,
            dispersion=dispersion,
            late_sends=late,
            arrival=arrival,
        )
        found = [f.to_json() for f in rules.diagnose(ev)]
        per_request = (
            {
                name: round((row["calls"] or 0) / counted, 3)
                for name, row in sorted(calls.items(), key=lambda kv: -(kv[1]["calls"] or 0))
            }
            if calls and counted
            else None
        )
        flames = self._render()
        threads = rules._thread_series(ev.processes) if ev.processes else []
        doc = {
            "pid": self.pid,
            "window": {"start_unix": self._window[0], "duration_s": self._window[1]},
            "requests": requests,
            "cpu": cpu or None,
            "processes": ev.processes,
            "stacks": self._blocks.get("stacks"),
            "syscalls": {**syscalls, "per_request": per_request} if syscalls else None,
            "client": {"dispersion_10ms": dispersion, "late_sends": late, "arrival": arrival},
            "findings": found,
            "skipped": self.skipped,
        }
        write_text_atomic(self.folder / "profile.json", json.dumps(doc) + "\n")
        top = dict(list(per_request.items())[:TOP_SYSCALLS]) if per_request else None
        return {
            "profile": self.folder.name,
            "findings": found,
            "skipped": self.skipped,
            "core_busy": [round(b, 3) for b in rules.core_busy(ev.cpu or [])],
            "threads": {"first": threads[0], "last": threads[-1], "peak": max(threads)}
            if threads
            else None,
            "syscalls_per_request": top,
            "dispersion_10ms": dispersion,
            "late_sends": late,
            "flamegraphs": flames,
        }

    def _render(self) -> dict[str, str]:
        """Flame graphs of the folded stacks as SVG files beside them; a failure is skipped."""
        out: dict[str, str] = {}
        stacks = self._blocks.get("stacks") or {}
        for key in ("oncpu", "offcpu"):
            name = stacks.get(key)
            if not name or not (self.folder / name).stat().st_size:
                continue
            try:
                from lanes.diagnose.flame import render

                svg = render(
                    self.folder / name,
                    self.folder / f"{key}.svg",
                    f"{'off' if key == 'offcpu' else 'on'}-CPU, pid {self.pid}",
                    offcpu=key == "offcpu",
                )
                out[key] = svg.name
            except Exception as err:
                self.skipped.append(f"flame graph {key}: {err}")
        return out


def _counted_requests(
    requests: int, syscalls: dict[str, Any] | None, window_s: float | None
) -> int:
    """The requests of the seconds the syscall tracer counted: all of the window's, unless the
    tracer had to be started again (the attach rule in :mod:`lanes.diagnose.syscalls`) and so
    counted only the window's last ``seconds`` — then the window's requests scaled by that
    share (the load is steady within a window)."""
    if not syscalls or (syscalls.get("attempts") or 1) <= 1 or not window_s:
        return requests
    share = min(1.0, float(syscalls.get("seconds") or 0.0) / window_s)
    return max(1, round(requests * share)) if requests else 0
