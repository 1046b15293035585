"""``lanes serve --deadline-rule`` on the real command line: under ``start`` (the default) a
request whose batch starts before its deadline runs to the end, however late; under ``finish``
one whose batch is estimated to end past its deadline is answered 504 at once and never runs,
while one with room to spare is served, and the server counts each refusal as expired."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from test_overload import MODEL_PY, REQUEST  # slow: 20 ms a batch; its request

from serve_process import model_toml, running, write_model


def infer(url: str, deadline_ms: float) -> tuple[int, dict[str, object]]:
    """One request to ``slow`` with a ``lanes-timeout-ms`` deadline: its status and body."""
    request = urllib.request.Request(
        f"{url}/v2/models/slow/infer", data=REQUEST, headers={"lanes-timeout-ms": str(deadline_ms)}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def stats(url: str) -> dict[str, object]:
    with urllib.request.urlopen(f"{url}/v2/models/slow/stats", timeout=10) as r:
        model: dict[str, object] = json.loads(r.read())["model_stats"][0]
        return model


@pytest.mark.parametrize("rule", [None, "start", "finish"])
def test_a_deadline_shorter_than_the_batch_is_refused_only_under_finish(
    tmp_path: Path, rule: str | None
) -> None:
    # The model sleeps 20 ms a batch and says so in its cost prior; warm-up measures it too.
    repo = write_model(tmp_path / "repo", "slow", MODEL_PY, model_toml(4, cost_ms=20))
    args = ["--models", str(repo), "--devices", "cpu", "--port", "0", "--metrics-port", "off"]
    args += ["--grpc-port", "off", "--policy", "fifo"]
    if rule is not None:
        args += ["--deadline-rule", rule]
    with running(args, tmp_path / "serve.log") as server:
        # 12 ms: enough to reach an idle device's cut on a loaded host, short of the batch.
        status, body = infer(server.url, 12)
        before = stats(server.url)
        if rule == "finish":
            # Refused at the cut, never run.
            assert status == 504, body
            assert "predicted to miss its deadline; dropped, not run" in str(body["error"])
            assert before["lanes"] == {"rejected": 0, "expired": 1, "cancelled": 0}
            assert before["inference_count"] == 0
        else:
            # The device was free: the batch started at once, within the deadline, and ran.
            assert status == 200, body
            assert body["outputs"][0]["data"] == [2, 4]  # type: ignore[index]
            assert before["lanes"] == {"rejected": 0, "expired": 0, "cancelled": 0}
        # A deadline with room for the batch is served under every rule.
        status, body = infer(server.url, 2_000)
        assert status == 200, body
        after = stats(server.url)
        assert after["inference_count"] == before["inference_count"] + 1  # type: ignore[operator]
    log = (tmp_path / "serve.log").read_text()
    assert ("deadlines: finish" in log) == (rule == "finish"), log
