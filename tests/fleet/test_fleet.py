"""A serving fleet on a real local Ray cluster: a head and two worker nodes on 127.0.0.1 (as
Ray's own tests run several nodes in one host), each member a real ``lanes serve`` on one
simulated GPU serving a python-adapter model over loopback. The cluster and the fleet start
once for the module; the tests run in file order (the last one takes the fleet down).
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import lanes.fleet
from lanes.cli import main
from lanes.errors import FLEET_EXISTS, FLEET_NOT_FOUND, MEMBER_NOT_READY, LanesError
from lanes.fleet import FleetConfig
from ray_cluster import local_cluster, require_ray
from serve_process import lanes_command, model_toml, write_model

ray = require_ray()
# one worker starts the Ray clusters, one after another
pytestmark = pytest.mark.xdist_group("ray")

DOUBLE_PY = """\
def predict(batch):
    return {"y": batch["x"] * 2}
"""
BROKEN_PY = """\
def load(device):
    raise RuntimeError("no weights here")


def predict(batch):
    return {"y": batch["x"]}
"""
HANGING_PY = """\
import time


def load(device):
    time.sleep(3600)


def predict(batch):
    return {"y": batch["x"]}
"""
SLOW_MS = 1500.0
"""The ``slow`` model's device time per batch (a simulated GPU holds it that long)."""
ENV = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
"""The command line's environment: lanes fleet keeps a loopback cluster on loopback itself."""
SERVE_ARGS = ("--policy", "fifo", "--warmup-batches", "0", "--workers", "1")


def request(x: list[float]) -> bytes:
    return json.dumps(
        {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": x}]}
    ).encode()


def infer(url: str, model: str = "double", x: list[float] | None = None) -> tuple[int, Any]:
    data = request(x or [1.0, 2.0])
    req = urllib.request.Request(f"{url}/v2/models/{model}/infer", data=data)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def wait_until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Poll ``condition`` (state is read, never guessed by sleeping)."""
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "condition not met in time"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A head and two worker nodes on 127.0.0.1, one CPU each; the GCS address."""
    with local_cluster(workers=2) as address:
        try:
            yield address
        finally:
            if ray.is_initialized():
                for name in ("default", "broken", "hanging", "once"):
                    lanes.fleet.down(name=name, drain_timeout=0.0)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fleet") / "repo"
    write_model(root, "double", DOUBLE_PY, model_toml(4, cost_ms=1.0))
    return write_model(root, "slow", DOUBLE_PY, model_toml(1, cost_ms=SLOW_MS))


@pytest.fixture(scope="module")
def fleet(cluster: str, repo: Path) -> list[lanes.fleet.MemberStatus]:
    """The fleet, brought up by the real command line (a driver of its own that exits)."""
    up = [*lanes_command(), "fleet", "up", "--address", cluster, "--devices", "sim:1"]
    up += ["--host", "127.0.0.1", "--models", str(repo), "--ready-timeout", "60"]
    up += ["--health-interval", "0.2", "--", *SERVE_ARGS]
    done = subprocess.run(up, capture_output=True, text=True, timeout=120, check=False, env=ENV)
    assert done.returncode == 0, done.stderr
    assert done.stderr.endswith("lanes fleet: 'default' up: 3 members ready\n"), done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3 and all(" · devices sim:1 · ready · restarts 0" in x for x in lines)
    return lanes.fleet.status(cluster)


def test_up_places_one_member_per_node_and_serves_kserve_v2(cluster, fleet):
    alive = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
    assert len(alive) == 3
    assert {m.node_id for m in fleet} == alive
    assert [m.index for m in fleet] == [0, 1, 2]
    for m in fleet:
        assert m.state == "ready" and m.restarts == 0 and m.devices == "sim:1"
        assert m.url is not None and m.url.startswith("http://127.0.0.1:")
        status, body = infer(m.url, x=[1.5, -2.0])
        assert status == 200, body
        assert body["outputs"][0]["data"] == [3.0, -4.0]
    assert len({m.url for m in fleet}) == 3


def test_status_and_members_list_the_fleet(cluster, fleet, capsys):
    assert main(["fleet", "status", "--json", "--address", cluster]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["name"] == "default"
    assert [(m["index"], m["url"], m["state"], m["restarts"]) for m in shown["members"]] == [
        (m.index, m.url, "ready", 0) for m in fleet
    ]
    assert main(["fleet", "status", "--address", cluster]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and all(" · ready · restarts 0" in line for line in lines)
    assert lanes.fleet.members(cluster) == [m.url for m in fleet]


def test_up_again_and_status_of_no_fleet_are_refused(cluster, fleet, repo):
    with pytest.raises(LanesError) as err:
        lanes.fleet.up(FleetConfig(devices="sim:1", models=repo), cluster)
    assert err.value.code == FLEET_EXISTS
    assert "lanes fleet down --name default first" in err.value.message
    with pytest.raises(LanesError) as err:
        lanes.fleet.status(cluster, "nosuch")
    assert err.value.code == FLEET_NOT_FOUND


def test_a_member_that_fails_or_never_gets_ready_fails_up_and_leaves_nothing(cluster, fleet,
                                                                            tmp_path):  # fmt: skip
    broken = write_model(tmp_path / "broken", "m", BROKEN_PY, model_toml(1))
    with pytest.raises(LanesError) as err:
        lanes.fleet.up(FleetConfig(name="broken", devices="sim:1", models=broken), cluster)
    assert err.value.code == MEMBER_NOT_READY
    assert "): lanes serve exited with status 1: RuntimeError: no weights here;" in (
        err.value.message
    )
    assert err.value.message.endswith("; the fleet was taken down")
    hanging = write_model(tmp_path / "hanging", "m", HANGING_PY, model_toml(1))
    config = FleetConfig(name="hanging", devices="sim:1", models=hanging, ready_timeout_s=2.0)
    with pytest.raises(LanesError) as err:
        lanes.fleet.up(config, cluster)
    assert err.value.code == MEMBER_NOT_READY
    assert "not ready within 2 s" in err.value.message  # by the member, or up on a slow host
    left = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)]
    assert not [n for n in left if n.startswith(("lanes-fleet:broken", "lanes-fleet:hanging"))]
    # the fleet that was up is untouched
    assert [m.state for m in lanes.fleet.status(cluster)] == ["ready"] * 3


def _send(url: str, results: list[Any]) -> None:
    """One ``slow`` request; appends the response's status or the connection error."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("POST", "/v2/models/slow/infer", body=request([1.0, 1.0]))
        results.append(conn.getresponse().status)
    except (ConnectionError, http.client.HTTPException) as err:
        results.append(err)
    finally:
        conn.close()


def _started_batches(url: str) -> int:
    with urllib.request.urlopen(f"{url}/v2/models/slow/stats", timeout=10) as r:
        return int(json.loads(r.read())["model_stats"][0]["inference_stats"]["queue"]["count"])


def test_a_killed_member_is_restarted_by_ray_and_serves_again(cluster, fleet):
    victim = fleet[0]
    assert victim.url is not None and victim.pid is not None
    results: list[Any] = []
    senders = [threading.Thread(target=_send, args=(victim.url, results)) for _ in range(3)]
    for t in senders:
        t.start()
    wait_until(lambda: _started_batches(victim.url) >= 1)  # one on the device, two queued
    os.kill(victim.pid, signal.SIGKILL)
    for t in senders:
        t.join(timeout=30)
        assert not t.is_alive()
    # Every in-flight request ends: an answer, or a connection error (the client's retryable
    # class), never a wrong answer or a hang.
    assert len(results) == 3
    for result in results:
        assert result == 200 or isinstance(result, (ConnectionError, http.client.HTTPException))

    def restarted() -> bool:
        now = lanes.fleet.status(cluster)[0]
        return now.state == "ready" and now.restarts == 1

    wait_until(restarted, timeout=60.0)
    now = lanes.fleet.status(cluster)
    assert now[0].pid != victim.pid
    assert now[0].url == victim.url  # the restarted member asked for its old port again
    assert now[0].node_id == victim.node_id
    assert [m.restarts for m in now[1:]] == [0, 0]
    assert infer(now[0].url)[0] == 200
    assert lanes.fleet.members(cluster) == [m.url for m in now]


def test_a_killed_member_actor_takes_its_server_with_it_and_is_restarted(cluster, fleet):
    from lanes.fleet.registry import member_name

    old = lanes.fleet.status(cluster)[2]
    assert old.state == "ready" and old.pid is not None
    actor = ray.get_actor(member_name("default", 2), namespace="lanes")
    ray.kill(actor, no_restart=False)  # the actor's process dies; Ray may restart it
    wait_until(lambda: not _alive(old.pid), timeout=10.0)  # PR_SET_PDEATHSIG: no orphan server

    def restarted() -> bool:
        now = lanes.fleet.status(cluster)[2]
        return now.state == "ready" and now.restarts == old.restarts + 1

    wait_until(restarted, timeout=60.0)
    assert infer(lanes.fleet.status(cluster)[2].url or "")[0] == 200


def test_a_member_out_of_restarts_is_dead_and_no_longer_listed(cluster, fleet, repo):
    config = FleetConfig(
        name="once", devices="sim:1", host="127.0.0.1", models=repo, serve_args=SERVE_ARGS,
        max_restarts=0, health_interval_s=0.2,
    )  # fmt: skip
    members = lanes.fleet.up(config, cluster)
    assert members[0].pid is not None
    os.kill(members[0].pid, signal.SIGKILL)
    wait_until(lambda: lanes.fleet.status(cluster, "once")[0].state == "dead")
    assert [m.state for m in lanes.fleet.status(cluster, "once")[1:]] == ["ready", "ready"]
    assert lanes.fleet.members(cluster, "once") == [m.url for m in members[1:]]
    assert lanes.fleet.down(cluster, "once", drain_timeout=0.0) == 2
    assert lanes.fleet.members(cluster) == [m.url for m in lanes.fleet.status(cluster)]


def _double_rows(url: str) -> int:
    with urllib.request.urlopen(f"{url}/v2/models/double/stats", timeout=10) as r:
        return int(json.loads(r.read())["model_stats"][0]["inference_count"])


def _refused(url: str) -> bool:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=1.0).close()
    except ConnectionRefusedError:
        return True
    return False


def test_lanes_client_over_the_fleet_retries_what_never_reached_a_member(cluster, fleet):
    from lanes.client import Client, ClientConfig

    before = lanes.fleet.status(cluster)
    assert [m.state for m in before] == ["ready"] * 3
    rows = {m.index: _double_rows(m.url) for m in before if m.url}
    events: list[Any] = []
    config = ClientConfig(members=lanes.fleet.member_source(cluster), batch_timeout_ms=0.0)
    with Client(config, on_event=events.append) as client:
        assert {m.url for m in client.members()} == {m.url for m in before}
        client.metadata("double")
        victim = before[1]
        assert victim.url is not None and victim.pid is not None
        os.kill(victim.pid, signal.SIGKILL)
        wait_until(lambda: _refused(victim.url), timeout=10.0)
        calls = 30
        answers: list[Any] = [None] * calls

        def call(i: int) -> None:
            x = np.array([[i, 1.0]], dtype=np.float32)
            try:
                answers[i] = client.infer("double", {"x": x}, timeout_s=20.0)["y"]
            except LanesError as err:
                answers[i] = err

        threads = [threading.Thread(target=call, args=(i,)) for i in range(calls)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    # every call answered, and answered right
    for i, y in enumerate(answers):
        assert isinstance(y, np.ndarray) and y.tolist() == [[2.0 * i, 2.0]], (i, y)
    # the client tried the dead member, was refused, and took it out of balancing
    assert any(e.target == victim.url and e.state == "down" for e in events), events

    def back() -> bool:
        m = lanes.fleet.status(cluster)[1]
        return m.state == "ready" and m.pid != victim.pid

    wait_until(back, timeout=60.0)
    after = lanes.fleet.status(cluster)
    # each call ran exactly once: the refused attempts never reached a device and were retried
    ran = sum(
        _double_rows(m.url) - (0 if m.index == victim.index else rows[m.index])
        for m in after
        if m.url
    )
    assert ran == calls


def test_down_removes_every_member_and_is_idempotent(cluster, fleet):
    pids = [m.pid for m in lanes.fleet.status(cluster)]
    done = subprocess.run(
        [*lanes_command(), "fleet", "down", "--address", cluster, "--drain-timeout", "5"],
        capture_output=True, text=True, timeout=60, check=False, env=ENV,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == "lanes fleet: 'default' down: 3 members removed\n"
    for pid in pids:
        assert pid is not None
        wait_until(lambda pid=pid: not _alive(pid), timeout=10.0)
    for m in fleet:
        assert m.url is not None
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen(f"{m.url}/v2/health/live", timeout=5)
    left = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)]
    assert not [n for n in left if n.startswith("lanes-fleet:")]
    with pytest.raises(LanesError) as err:
        lanes.fleet.members(cluster)
    assert err.value.code == FLEET_NOT_FOUND
    assert lanes.fleet.down(cluster) == 0  # again: nothing to do, no error


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead


def test_no_ray_cluster_at_the_address_is_one_line(cluster):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    done = subprocess.run(
        [*lanes_command(), "fleet", "status", "--address", f"127.0.0.1:{closed}"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == (
        f"lanes fleet status: error: --address 127.0.0.1:{closed}: no Ray cluster there "
        "(Connection refused)\n"
    )
