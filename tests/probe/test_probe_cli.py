"""``lanes probe`` end to end against real loopback listeners and closed ports: JSON and text
events, the first round's initial states, errors naming the line, the privilege fallback, the
webhook, metrics, SIGHUP reload and a clean stop on Ctrl-C and SIGTERM."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from probe_support import MODES, port_of

from lanes.cli import main
from loopback import free_port, serve

FAST = ["--interval", "100ms"]
EVENT_KEYS = ["target", "name", "state", "previous", "at"]
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def probe(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["probe", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.parametrize("mode", MODES)
def test_json_events_report_every_initial_state(
    capsys: pytest.CaptureFixture[str],
    listener: socket.socket,
    write_targets: Callable[..., Path],
    mode: str,
) -> None:
    closed = free_port()
    path = write_targets(
        "# the fleet",
        f"127.0.0.1:{port_of(listener)} web",
        "",
        f"127.0.0.1:{closed}   # nobody home",
    )
    status, out, err = probe(capsys, str(path), "--mode", mode, "--json", "--rounds", "3", *FAST)
    assert status == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    assert [list(e) for e in events] == [EVENT_KEYS, EVENT_KEYS]
    assert [(e["target"], e["name"], e["state"], e["previous"]) for e in events] == [
        (f"127.0.0.1:{port_of(listener)}", "web", "up", None),
        (f"127.0.0.1:{closed}", None, "refused", None),
    ]
    assert all(ISO.match(e["at"]) for e in events), events
    assert f"{mode} mode" in err
    assert "warning" not in err


def test_text_events_and_round_summaries(
    capsys: pytest.CaptureFixture[str],
    listener: socket.socket,
    write_targets: Callable[..., Path],
) -> None:
    path = write_targets(f"127.0.0.1:{port_of(listener)} gpu a")
    status, out, err = probe(capsys, str(path), "--mode", "connect", "--rounds", "2", "-v", *FAST)
    assert status == 0, err
    (line,) = out.splitlines()
    assert re.match(rf"^\S+Z  127\.0\.0\.1:{port_of(listener)} \(gpu a\)  up$", line), line
    rounds = [x for x in err.splitlines() if x.startswith("lanes probe: round ")]
    assert len(rounds) == 2
    assert "1 probes, 1 replies" in rounds[0]


def test_a_bad_targets_file_names_the_line(
    capsys: pytest.CaptureFixture[str], write_targets: Callable[..., Path]
) -> None:
    path = write_targets("127.0.0.1:80", "# fine", "127.0.0.1:http")
    status, out, err = probe(capsys, str(path), "--rounds", "1")
    assert status == 2
    assert out == ""
    assert err == (
        f'lanes probe: error: {path} line 3: "http" in "127.0.0.1:http" is not a port in 1-65535\n'
    )
    status, _, err = probe(capsys, str(path.with_name("absent.txt")))
    assert status == 2
    assert "absent.txt" in err
    status, _, err = probe(capsys, str(path), "--interval", "2s", "--timeout", "3s")
    assert status == 2
    assert "timeout must be" in err


def test_without_raw_privilege_syn_falls_back_with_a_clear_message(
    capsys: pytest.CaptureFixture[str],
    listener: socket.socket,
    write_targets: Callable[..., Path],
) -> None:
    path = write_targets(f"127.0.0.1:{port_of(listener)}")
    status, out, err = probe(
        capsys, str(path), "--simulate-no-raw", "--json", "--rounds", "1", *FAST
    )
    assert status == 0
    assert "lanes probe: warning: syn mode needs CAP_NET_RAW" in err
    assert "probing in connect mode instead" in err
    assert json.loads(out)["state"] == "up"


def test_webhook_gets_every_event(
    capsys: pytest.CaptureFixture[str],
    listener: socket.socket,
    write_targets: Callable[..., Path],
) -> None:
    path = write_targets(f"127.0.0.1:{port_of(listener)} a", f"127.0.0.1:{free_port()} b")
    with serve(200) as hook:
        status, out, err = probe(
            capsys, str(path), "--mode", "connect", "--json", "--rounds", "1",
            "--webhook", hook.url, *FAST,
        )  # fmt: skip
        assert status == 0, err
        posted = [json.loads(s.body) for s in hook.seen]
    assert posted == [json.loads(line) for line in out.splitlines()]
    assert {s.method for s in hook.seen} == {"POST"}
    assert {s.headers["content-type"] for s in hook.seen} == {"application/json"}


def test_metrics_port_is_announced(
    capsys: pytest.CaptureFixture[str],
    listener: socket.socket,
    write_targets: Callable[..., Path],
) -> None:
    path = write_targets(f"127.0.0.1:{port_of(listener)}")
    status, _, err = probe(
        capsys, str(path), "--mode", "connect", "--rounds", "1", "--metrics-port", "0", *FAST
    )
    assert status == 0
    assert re.search(r"lanes probe: metrics on http://127\.0\.0\.1:\d+/metrics", err), err


def _spawn(path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "lanes", "probe", str(path), "--json", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _next_event(proc: subprocess.Popen[str]) -> dict[str, object]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, f"the prober ended early: {proc.stderr.read() if proc.stderr else ''}"
    event: dict[str, object] = json.loads(line)
    return event


def test_sighup_reloads_and_ctrl_c_stops_cleanly(
    write_targets: Callable[..., Path],
) -> None:
    a, b = socket.socket(), socket.socket()
    for s in (a, b):
        s.bind(("127.0.0.1", 0))
        s.listen(8)
    # Two targets written the same length, so rewriting in place and restoring the time
    # leaves nothing for the change watch to see: only SIGHUP can make the prober reload.
    line_a = f"127.0.0.1:{port_of(a):05d}"
    line_b = f"127.0.0.1:{port_of(b):05d}"
    path = write_targets(line_a)
    before = path.stat()
    proc = _spawn(path, "--mode", "connect", *FAST)
    try:
        assert _next_event(proc)["target"] == f"127.0.0.1:{port_of(a)}"
        with path.open("r+") as f:
            f.write(line_b + "\n")
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        proc.send_signal(signal.SIGHUP)
        event = _next_event(proc)
        assert (event["target"], event["state"], event["previous"]) == (
            f"127.0.0.1:{port_of(b)}",
            "up",
            None,
        )
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)
        a.close()
        b.close()
    assert proc.returncode == 130, err
    assert "targets reloaded" in err and "(1 added, 1 removed)" in err
    assert re.search(r"lanes probe: interrupted: stopped after \d+ rounds\n$", err), err


def test_sigterm_stops_cleanly(listener: socket.socket, write_targets: Callable[..., Path]) -> None:
    path = write_targets(f"127.0.0.1:{port_of(listener)}")
    proc = _spawn(path, "--mode", "connect", *FAST)
    try:
        assert _next_event(proc)["state"] == "up"
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert "terminated: stopped after" in err
