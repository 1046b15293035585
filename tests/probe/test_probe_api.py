"""``lanes.probe`` from Python: typed messages in order, the metrics endpoint, errors with codes,
and the webhook's bounded retries and bounded queue."""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from probe_support import MODES, port_of
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from lanes import probe
from lanes.errors import LanesError
from lanes.probe.webhook import Webhook
from loopback import free_port, serve

OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def drain(run: probe.Run) -> list[probe.Message]:
    """Every message until the run ends (it must be bounded)."""
    out: list[probe.Message] = []
    while (batch := run.poll(5.0)) is not None:
        out.extend(batch)
    run.result()
    return out


@pytest.mark.parametrize("mode", MODES)
def test_messages_are_typed_and_in_order(
    listener: socket.socket, write_targets: Callable[..., Path], mode: str
) -> None:
    path = write_targets(f"127.0.0.1:{port_of(listener)} a", f"127.0.0.1:{free_port()} b")
    run = probe.start(path, mode=mode, rounds=2, interval=0.1)
    assert run.mode == mode
    messages = drain(run)
    assert isinstance(messages[0], probe.Notice)
    assert isinstance(messages[-1], probe.Round)
    events = [m for m in messages if isinstance(m, probe.Event)]
    rounds = [m for m in messages if isinstance(m, probe.Round)]
    assert [(e.name, e.state, e.previous, e.round) for e in events] == [
        ("a", "up", None, 0),
        ("b", "refused", None, 0),
    ]
    # Events of a round come before its report.
    assert messages.index(events[-1]) < messages.index(rounds[0])
    assert [r.round for r in rounds] == [0, 1]
    for r in rounds:
        assert (r.targets, r.sent, r.replies, r.accepted, r.refused) == (2, 2, 2, 1, 1)
        assert (r.up, r.refused_targets, r.down, r.pending, r.kernel_drops) == (1, 1, 0, 0, 0)
    assert rounds[0].transitions == 2
    assert rounds[1].transitions == 0
    line = events[0].to_json()
    assert line.startswith(f'{{"target": "127.0.0.1:{port_of(listener)}", "name": "a", ')


def test_metrics_endpoint_serves_openmetrics_text(
    listener: socket.socket, write_targets: Callable[..., Path]
) -> None:
    path = write_targets(f"127.0.0.1:{port_of(listener)}")
    run = probe.start(path, mode="connect", interval=3600.0, metrics_port=0)
    try:
        while not any(isinstance(m, probe.Round) for m in run.poll(5.0) or []):
            pass
        address = run.metrics_address
        assert address is not None
        host, port = address
        with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
            assert response.headers["Content-Type"] == OPENMETRICS
        assert 'lanes_probe_targets{state="up"} 1' in text.splitlines()
        assert "lanes_probe_rounds_total 1" in text.splitlines()
        assert text.endswith("\n# EOF\n")
        assert run.metrics().splitlines()[:4] == text.splitlines()[:4]
        families = {f.name: f for f in text_string_to_metric_families(text)}
        assert families["lanes_probe_rounds"].type == "counter"
        assert families["lanes_probe_round_duration_seconds"].type == "histogram"
        assert {s.labels["mode"] for s in families["lanes_probe_info"].samples} == {"connect"}
        count = [
            s.value
            for s in families["lanes_probe_round_duration_seconds"].samples
            if s.name.endswith("_count")
        ]
        assert count == [1]
    finally:
        run.stop()
        assert run.wait(5.0)


def test_errors_have_codes(tmp_path: Path, write_targets: Callable[..., Path]) -> None:
    good = write_targets("127.0.0.1:80")
    cases = [
        (lambda: probe.start(good, interval=0.0), "bad_argument", "interval must be"),
        (lambda: probe.start(good, down_after=0), "bad_argument", "down_after must be in"),
        (lambda: probe.start(tmp_path / "none.txt"), "io_error", "none.txt"),
        (lambda: probe.start(write_targets("")), "targets_invalid", "no targets"),
        (lambda: probe.start(good, mode="icmp"), "bad_argument", "unknown variant `icmp`"),
    ]
    for start, code, text in cases:
        with pytest.raises(LanesError) as caught:
            start()
        assert caught.value.code == code
        assert text in caught.value.message


def test_webhook_retries_server_errors_then_gives_up() -> None:
    with serve(503) as hook:
        webhook = Webhook(hook.url, retries=2, backoff=0.01)
        webhook.post({"target": "x"})
        stats = webhook.close(drain_s=5.0)
        assert hook.count == 3
    assert (stats.delivered, stats.failed, stats.dropped) == (0, 1, 0)
    assert stats.last_error == "HTTP 503"


def test_webhook_does_not_retry_client_errors() -> None:
    with serve(404) as hook:
        webhook = Webhook(hook.url, retries=3, backoff=0.01)
        webhook.post({"target": "x"})
        stats = webhook.close(drain_s=5.0)
        assert hook.count == 1
    assert stats.failed == 1


def test_webhook_queue_is_bounded_and_post_never_blocks() -> None:
    webhook = Webhook(f"http://127.0.0.1:{free_port()}/", capacity=2, retries=0, timeout=1.0)
    for i in range(50):
        webhook.post({"i": i})
    stats = webhook.close(drain_s=5.0)
    assert stats.delivered == 0
    assert stats.failed + stats.dropped == 50
    assert stats.dropped >= 47


def test_webhook_wants_an_http_url() -> None:
    with pytest.raises(LanesError) as caught:
        Webhook("ftp://x")
    assert caught.value.code == "bad_argument"
