"""The client's rules as pure functions, table-driven: the retry rule, the balancing rule and
its estimates, splitting a batch's answer, and the config's checks."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import numpy as np
import pytest

from lanes.client import ClientConfig, ClientError
from lanes.client.balancer import CostModel, interpolate, pick
from lanes.client.batcher import Batch, Call, Coalescer, split
from lanes.client.errors import AttemptFailed, code_of, drops_member, retryable
from lanes.errors import LanesError


@pytest.mark.parametrize(
    ("failure", "retry", "drop", "code"),
    [
        (AttemptFailed("connect", "cannot connect"), True, True, "unavailable"),
        (AttemptFailed("http", "model 'm': queue full", 429), True, False, "queue_full"),
        (AttemptFailed("http", "not ready: draining", 503), True, True, "unavailable"),
        (AttemptFailed("http", "model 'm' not ready: warming", 503), True, True, "unavailable"),
        (
            AttemptFailed("http", "draining: not finished within the drain timeout", 503),
            False,
            True,
            "unavailable",
        ),
        (AttemptFailed("http", "model failed", 500), False, False, "model_failed"),
        (AttemptFailed("http", "deadline exceeded", 504), False, False, "deadline_exceeded"),
        (AttemptFailed("http", "bad shape", 400), False, False, "bad_input"),
        (AttemptFailed("http", "unknown model", 404), False, False, "unknown_model"),
        (AttemptFailed("lost", "reset"), False, True, "connection_lost"),
        (AttemptFailed("timeout", "no answer"), False, False, "deadline_exceeded"),
        (AttemptFailed("undecodable", "junk"), False, False, "bad_response"),
    ],
)
def test_retry_only_what_never_reached_a_device(
    failure: AttemptFailed, retry: bool, drop: bool, code: str
) -> None:
    assert (retryable(failure), drops_member(failure), code_of(failure)) == (retry, drop, code)
    assert failure.sent == (failure.kind != "connect")


@dataclass
class Fake:
    outstanding_s: float = 0.0
    inflight: int = 0
    last_pick: int = 0
    costs: dict[str, CostModel] = field(default_factory=dict)

    def cost_model(self, model: str) -> CostModel:
        return self.costs.setdefault(model, CostModel())


def server(**by_size: float) -> dict[str, CostModel]:
    return {"m": CostModel(server={int(k[1:]): v for k, v in by_size.items()})}


@pytest.mark.parametrize(
    ("members", "chosen"),
    [
        ([Fake(), Fake()], 0),  # a tie: the first
        ([Fake(last_pick=2), Fake(last_pick=1)], 1),  # then the one picked longest ago
        ([Fake(inflight=1), Fake()], 1),  # then fewer in flight
        ([Fake(outstanding_s=0.5), Fake(outstanding_s=0.1)], 1),  # least outstanding
        # a cheaper member wins even with more outstanding: the estimated finish decides
        ([Fake(0.03, costs=server(b4=0.01)), Fake(0.0, costs=server(b4=0.1))], 0),
        ([Fake(0.2, costs=server(b4=0.01)), Fake(0.0, costs=server(b4=0.1))], 1),
        # no estimate of its own: the others' average (0.1), so outstanding decides
        ([Fake(0.05, costs=server(b4=0.1)), Fake(0.0)], 1),
    ],
)
def test_pick_least_outstanding_estimated_work(members: list[Fake], chosen: int) -> None:
    picked = pick(members, "m", 4)
    assert picked is not None and picked[0] == chosen


def test_estimates_interpolate_and_prefer_the_servers() -> None:
    assert interpolate({}, 3) is None
    points = {1: 1.0, 4: 4.0, 8: 6.0}
    assert [interpolate(points, r) for r in (1, 2, 6, 16)] == [1.0, 2.0, 5.0, 12.0]
    model = CostModel()
    model.observe(4, 1.0, 0.5)
    model.observe(4, 2.0, 0.5)
    assert model.own(4) == 1.5  # the client's EWMA
    model.server = {4: 0.2}
    assert model.own(4) == 0.2  # the server's estimate wins
    assert pick([], "m", 1) is None


def test_split_gives_each_call_its_rows() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        calls = [Call({}, r, None, loop.create_future()) for r in (1, 3, 2)]
        y = np.arange(12).reshape(6, 2)
        parts = split({"y": y}, calls)
        assert [p["y"].tolist() for p in parts] == [
            [[0, 1]],
            [[2, 3], [4, 5], [6, 7]],
            [[8, 9], [10, 11]],
        ]
        with pytest.raises(ClientError, match="a batch of 6 rows needs 6 first"):
            split({"y": y[:5]}, calls)

    asyncio.run(main())


def test_coalescer_closes_full_batches_and_sends_big_calls_alone() -> None:
    async def main() -> list[list[int]]:
        sent: list[Batch] = []
        coalescer = Coalescer(10.0, sent.append)
        loop = asyncio.get_running_loop()
        for rows in (2, 1, 1, 3, 5, 2):
            x = np.zeros((rows, 2), dtype=np.float32)
            coalescer.add("m", Call({"x": x}, rows, None, loop.create_future()), 4)
        # another signature (other trailing dims) never shares a batch
        y = np.zeros((1, 3), dtype=np.float32)
        coalescer.add("m", Call({"x": y}, 1, None, loop.create_future()), 4)
        coalescer.flush()
        return [[c.rows for c in b.calls] for b in sent]

    assert asyncio.run(main()) == [[2, 1, 1], [3], [5], [2], [1]]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("batch_timeout_ms", -1),
        ("max_batch_size", 0),
        ("max_attempts", 0),
        ("timeout_s", 0),
        ("probe_interval_s", float("nan")),
        ("max_connections", True),
    ],
)
def test_config_names_the_bad_key(key: str, value: object) -> None:
    with pytest.raises(LanesError, match=rf"ClientConfig\.{key} = ") as err:
        ClientConfig(members=["http://127.0.0.1:8000"], **{key: value})  # type: ignore[arg-type]
    assert err.value.code == "bad_argument"
    with pytest.raises(LanesError, match=r"ClientConfig\.members"):
        ClientConfig(members="http://127.0.0.1:8000")
