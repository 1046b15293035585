"""``lanes serve``'s connection limits are options that reach the data plane: with
``--max-connections 1`` a second connection waits while the first holds the slot, and with
``--header-timeout 0.5`` the first, a head begun and never finished, is answered 408 naming the
deadline and closed, which frees the slot for the second. The options also come from the
environment (``LANES_SERVE_<KEY>``); bad values are refused naming the option
(tests/cli/test_serve_cli.py). Memory freed when connections close is given back (glibc's
``malloc_trim``, when the native server says a trim is due)."""

from __future__ import annotations

import json
import platform
import socket
import sys
from pathlib import Path

import pytest

from lanes.errors import LanesError
from lanes.serving.config import ServeConfig, resolve
from serve_process import model_toml, running, write_model

ECHO = "def predict(batch):\n    return {'y': batch['x']}\n"


def until_closed(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_max_connections_and_header_timeout_flags_reach_the_server(tmp_path: Path) -> None:
    repo = write_model(tmp_path / "repo", "echo", ECHO, model_toml(1))
    args = ["--models", str(repo), "--devices", "cpu", "--port", "0", "--metrics-port", "off"]
    args += ["--grpc-port", "off", "--max-connections", "1", "--header-timeout", "0.5"]
    with running(args, tmp_path / "serve.log") as p:
        slow = socket.create_connection((p.host, p.port), timeout=10)
        slow.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n")  # half a head
        waiting = socket.create_connection((p.host, p.port), timeout=10)
        waiting.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        waiting.settimeout(0.2)
        try:
            early = waiting.recv(1)
        except TimeoutError:
            early = b""
        assert early == b"", "served past --max-connections 1"
        waiting.settimeout(10)

        head, _, body = until_closed(slow).partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), head
        assert b"connection: close" in head.lower(), head
        assert json.loads(body) == {"error": "request head not received within 0.5 s"}
        assert until_closed(waiting).startswith(b"HTTP/1.1 200 OK\r\n")


def test_the_limits_come_from_the_environment_too() -> None:
    env = {
        "LANES_SERVE_MAX_CONNECTIONS": "100",
        "LANES_SERVE_HEADER_TIMEOUT": "2.5",
        "LANES_SERVE_BODY_TIMEOUT": "7",
        "LANES_SERVE_MAX_HEADER_KB": "16",
        "LANES_SERVE_GRPC_KEEPALIVE": "60",
    }
    cfg = resolve({"max_connections": "50"}, None, env)
    assert (cfg.max_connections, cfg.header_timeout, cfg.body_timeout) == (50, 2.5, 7.0)
    assert (cfg.max_header_kb, cfg.grpc_keepalive) == (16, 60.0)
    defaults = ServeConfig()
    assert (defaults.max_connections, defaults.header_timeout, defaults.body_timeout) == (
        16_384,
        30.0,
        60.0,
    )
    assert (defaults.max_header_kb, defaults.grpc_keepalive) == (64, 30.0)


@pytest.mark.parametrize(
    ("cli", "env", "file", "says"),
    [
        ({"max_header_kb": "4"}, {}, "", "--max-header-kb = 4: must be 8..1024"),
        ({}, {"LANES_SERVE_MAX_HEADER_KB": "4"}, "", "LANES_SERVE_MAX_HEADER_KB = 4: must be"),
        ({}, {}, "max_header_kb = 4", "serve.toml: max_header_kb = 4: must be 8..1024"),
        ({"inline_max_us": "5000"}, {}, "", "--inline-max-us = 5000: must be 0..1000 µs"),
        ({}, {"LANES_SERVE_INLINE_MAX_US": "-1"}, "", "LANES_SERVE_INLINE_MAX_US = -1: must be"),
        ({"trace_requests": "-1"}, {}, "", "--trace-requests = -1: must be 0..10000000"),
        ({}, {}, "trace_requests = 20000000", "trace_requests = 20000000: must be 0..10000000"),
        ({"deadline_rule": "end"}, {}, "", "--deadline-rule = 'end': allowed are start, finish"),
        ({}, {"LANES_SERVE_DEADLINE_RULE": "Finish"}, "", "LANES_SERVE_DEADLINE_RULE = 'Finish'"),
        ({}, {}, 'deadline_rule = "stop"', "serve.toml: deadline_rule = 'stop': allowed are"),
        # The flag wins over the variable, and the error names the flag.
        (
            {"header_timeout": "0"},
            {"LANES_SERVE_HEADER_TIMEOUT": "1"},
            "",
            "--header-timeout = 0.0",
        ),
    ],
)
def test_a_range_error_names_where_the_value_came_from(
    tmp_path: Path, cli: dict[str, str], env: dict[str, str], file: str, says: str
) -> None:
    config = tmp_path / "serve.toml"
    config.write_text(f"[serve]\n{file}\n")
    with pytest.raises(LanesError) as err:
        resolve(cli, config if file else None, env)
    assert says in err.value.message


def test_freed_memory_is_given_back_where_glibc_is() -> None:
    from lanes.serving.memory import give_memory_back, resident_bytes

    glibc = sys.platform == "linux" and platform.libc_ver()[0] == "glibc"
    assert give_memory_back() is glibc
    assert resident_bytes() > 0 or sys.platform != "linux"


MIB = 1 << 20


@pytest.mark.parametrize(
    ("polls", "expected"),
    [
        # (time s, resident MiB, trimmed to MiB or None) per poll; the rule checks once a minute
        ([(10, 500, None), (59.9, 500, None)], [False, False]),
        # the first check trims, to learn the level a trim leaves
        ([(60, 90, 80)], [True]),
        # then only a growth of 1 MiB over that level is due, and only at a check
        ([(60, 90, 80), (120, 80.9, None), (180, 81, 80.2)], [True, False, True]),
        (
            [(60, 90, 80), (90, 200, None), (119.9, 200, None), (120, 200, 80)],
            [True] + [False] * 2 + [True],
        ),
        # a poll between checks is never due, whatever resident is
        ([(60, 90, 80), (61, 500, None)], [True, False]),
    ],
)
def test_a_trim_is_due_when_resident_memory_creeps(
    polls: list[tuple[float, float, float | None]], expected: list[bool]
) -> None:
    from lanes.serving.memory import Creep

    creep = Creep(start=0.0)
    got = []
    for now, resident, left in polls:
        due = creep.due(now, int(resident * MIB))
        got.append(due)
        if due:
            assert left is not None, f"a trim at {now} s was not expected"
            creep.trimmed(int(left * MIB))
    assert got == expected


def test_a_trim_for_closed_connections_sets_the_level_too() -> None:
    from lanes.serving.memory import Creep

    creep = Creep(start=0.0)
    creep.trimmed(100 * MIB)  # the connection rule trimmed first
    assert not creep.due(60, 100 * MIB + MIB - 1)
    assert creep.due(120, 101 * MIB)
