"""``lanes serve`` as a process under overload: a model repository written to a temporary folder,
the real command line (``lanes serve --models DIR --port 0``), and rounds of hundreds of
concurrent requests. The queue bound answers 429 at once, the server's memory stays flat from
round to round, it still serves afterwards, and SIGTERM stops it cleanly."""

from __future__ import annotations

import asyncio
import json
import signal
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from serve_process import ServeProcess, model_toml, running, write_model

ROUNDS = 3
CONCURRENT = 400
MODEL_PY = """\
import time


def predict(batch):
    time.sleep(0.02)  # a slow device: 20 ms a batch
    return {"y": batch["x"] * 2}
"""
REQUEST = json.dumps(
    {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]}]}
).encode()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServeProcess]:
    """``lanes serve`` on a repository holding ``slow`` (20 ms a batch, a 2-batch queue)."""
    repo = write_model(tmp_path / "repo", "slow", MODEL_PY, model_toml(4, max_enqueued_batches=2))
    args = ["--models", str(repo), "--devices", "cpu", "--port", "0", "--metrics-port", "off"]
    with running([*args, "--policy", "fifo"], tmp_path / "serve.log") as p:
        yield p


async def hammer(server: ServeProcess) -> tuple[list[Counter[int]], list[int]]:
    """``ROUNDS`` rounds of ``CONCURRENT`` simultaneous requests: the statuses of each round,
    and the server's RSS after each."""
    results: list[Counter[int]] = []
    rss: list[int] = []
    timeout = aiohttp.ClientTimeout(total=20)
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def one() -> int:
            async with session.post(f"{server.url}/v2/models/slow/infer", data=REQUEST) as r:
                payload = await r.json(content_type=None)
                if r.status == 429:
                    assert payload["error"].startswith("model 'slow': queue full")
                else:
                    assert payload["outputs"][0]["data"] == [2, 4], payload
                return r.status

        for _ in range(ROUNDS):
            statuses = await asyncio.gather(*(one() for _ in range(CONCURRENT)))
            results.append(Counter(statuses))
            rss.append(server.rss_bytes())
    return results, rss


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def test_overload_answers_429_and_memory_stays_bounded(server: ServeProcess) -> None:
    t0 = time.monotonic()
    rounds, rss = asyncio.run(hammer(server))
    elapsed = time.monotonic() - t0
    for counts in rounds:
        assert set(counts) <= {200, 429}, counts
        assert counts[200] >= 1  # the queue keeps serving while it refuses
        # The queue holds 8 rows and the device takes 20 ms a batch of 4: many are refused at once.
        assert counts[429] >= CONCURRENT // 4, counts
    assert elapsed < 30
    # Memory: what round 1 needed is reused, not grown, by rounds 2 and 3.
    assert rss[-1] < 1.5 * rss[0] + 20 * 2**20, [r // 2**20 for r in rss]

    stats = get(f"{server.url}/v2/models/slow/stats")["model_stats"]
    ok = sum(c[200] for c in rounds)
    refused = sum(c[429] for c in rounds)
    assert stats[0]["lanes"] == {"rejected": refused, "expired": 0, "cancelled": 0}
    assert stats[0]["inference_count"] == ok
    with urllib.request.urlopen(
        urllib.request.Request(f"{server.url}/v2/models/slow/infer", data=REQUEST), timeout=10
    ) as r:
        assert r.status == 200  # still serving

    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=10) == 0  # a clean stop
