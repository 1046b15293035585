"""Load from many machines: the lab's generators as Ray actors on a local multi-node Ray
cluster (a head and two worker nodes in this host, as Ray's own tests do, all on 127.0.0.1),
against a real loopback HTTP server.

Skipped without Ray only when ``LANES_REQUIRE_RAY`` is not ``"1"``.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lanes.bench.result import Result, merge
from lanes.errors import LanesError
from lanes.lab import generators, runner
from lanes.lab.cluster import Pool
from lanes.lab.experiment import Cluster, parse_experiment
from loopback import serve
from ray_cluster import local_cluster, require_ray

ray = require_ray()
# one worker starts the Ray clusters, one after another
pytestmark = pytest.mark.xdist_group("ray")


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A head and two worker nodes, one CPU each; the address. Shut down at the end."""
    with local_cluster(workers=2) as address:
        yield address


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "get.jsonl"
    path.write_text('{"method": "GET", "path": "/"}\n')
    return path


def _worker_nodes() -> set[str]:
    return {
        n["NodeID"]
        for n in ray.nodes()
        if n["Alive"] and "node:__internal_head__" not in n["Resources"]
    }


def test_generators_land_on_distinct_nodes_and_merge_exactly(cluster, corpus):
    load = {
        "rate": 300.0,
        "concurrency": None,
        "arrival": "poisson",
        "cv": 3.0,
        "trace": None,
        "segment_s": 1.0,
        "warmup_s": 0.2,
        "measure_s": 1.0,
        "seed": 5,
    }
    pool = Pool(Cluster(ray=cluster, machines=2), ["m"], {"m": corpus})
    try:
        assert {n.node_id for n in pool.nodes} == _worker_nodes()  # workers first, one each
        with serve() as srv:
            streams = generators.split(load, [0.5, 0.5], connections=8)
            specs = [
                (k, generators.spec_for(url=srv.url, model="m", corpus="(on the node)",
                                        stream=s, arrival="poisson", timeout_s=5.0,
                                        warmup_s=0.2, start_unix=generators.start_time()))
                for k, s in enumerate(streams)
            ]  # fmt: skip
            results, block = pool.launch(specs, 30.0, closed=False)
            dirs = [Path(ray.get(a.directory.remote())) for a in pool.actors]
    finally:
        pool.close()
    assert not ray.is_initialized()  # the pool joined the cluster, so it left it
    # every actor kept its corpus in a directory of its own, and removed it as the pool closed
    assert len(set(dirs)) == 2 and all(d.name.startswith("lanes-gen-") for d in dirs)
    assert not any(d.exists() for d in dirs)
    nodes = block["nodes"]
    assert len({n["node_id"] for n in nodes}) == 2 and block["machines"] == 2
    for n in nodes:
        assert n["generators"] == 1
        assert abs(n["clock_offset_ms"]) < 1000 and n["clock_uncertainty_ms"] >= 0
        assert set(n["send_delay_ms"]) == {"p50", "p99", "max"}
    # one schedule: R x d exactly, over both nodes
    assert sum(n["scheduled"] for n in nodes) == 300
    assert sum(n["sent"] for n in nodes) == 300
    total = merge(results)
    assert total.data["scheduled"] == 300 and total.requests == 300
    # exact: merging the nodes' merges gives the very same histogram as merging all at once
    by_halves = merge([merge([results[0]]), merge([results[1]])])
    assert by_halves.latency_ms == total.latency_ms
    assert by_halves.data["histograms"]["latency"] == total.data["histograms"]["latency"]
    assert total.latency_ms["max"] == max(r.latency_ms["max"] for r in results)


EXPERIMENT = """
name = "spread"
[[variant]]
name = "loop"
url = "{url}"
[workload]
mix = [{{model = "a", weight = 3, corpus = "get.jsonl"}},
       {{model = "b", weight = 1, corpus = "get.jsonl"}}]
levels = [200]
warmup_s = 0.3
measure_s = 1.0
repeats = 1
slo_ms = 2000
connections = 8
[stability]
max_extensions = 0
[cluster]
ray = "{address}"
machines = 2
{extra}
"""


def _experiment(
    srv_url: str, address: str, corpus: Path, extra: str = "", measure_s: float = 1.0
) -> tuple:
    text = EXPERIMENT.format(url=srv_url.rstrip("/"), address=address, extra=extra)
    text = text.replace("measure_s = 1.0", f"measure_s = {measure_s}")
    return parse_experiment(text, base=corpus.parent), text


def test_a_run_file_reports_each_node_and_a_run_behind_is_left_out(cluster, corpus, tmp_path):
    out = tmp_path / "results"
    with serve() as srv:
        # A clock bound no clock meets, and late sends let through: the run is flagged for
        # its clocks alone, whatever this host's load.
        extra = "max_clock_offset_ms = 0.000001\nmax_late_sends = 1"
        exp, text = _experiment(srv.url, cluster, corpus, extra)
        runner.run_experiment(exp, out, text)
    doc = json.loads((out / "runs" / "loop" / "L0-r1.json").read_text())
    load, block = doc["load"], doc["cluster"]
    assert load["requests"] == 200 and load["status_codes"] == {"200": 200}
    assert load["models"]["a"]["requests"] + load["models"]["b"]["requests"] == 200
    assert len({n["node_id"] for n in block["nodes"]}) == 2
    assert [n["generators"] for n in block["nodes"]] == [2, 2]  # two models per machine
    assert sum(n["scheduled"] for n in block["nodes"]) == 200
    assert all("clock_offset_ms" in n and "late_sends_fraction" in n for n in block["nodes"])
    assert block["behind"] is True
    assert len(block["reasons"]) == 2 and "may exceed 1e-06 ms" in block["reasons"][0]
    assert doc["speed_probe"] is None  # a url variant's server may run on another host
    summary = json.loads(runner.summarize(out).read_text())  # type: ignore[union-attr]
    assert summary["behind"] == [{"id": "loop/L0-r1", "reasons": block["reasons"]}]
    assert summary["variants"]["loop"]["levels"] == []  # not averaged in


def test_a_killed_generator_fails_the_run_naming_its_node(cluster, corpus, tmp_path):
    out = tmp_path / "results"
    killed: dict[str, str] = {}

    def kill_one(run_id: str, done: int, total: int) -> None:
        if run_id == "done" or killed:
            return
        names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)]
        name = sorted(n for n in names if n.startswith("lanes-generator-"))[-1]
        actor = ray.get_actor(name)
        pid, node = ray.get(actor.where.remote())
        killed["node"] = node
        threading.Timer(0.5, os.kill, (pid, signal.SIGKILL)).start()

    with serve() as srv:
        exp, text = _experiment(srv.url, cluster, corpus, measure_s=3.0)  # the default bounds
        started = time.monotonic()
        with pytest.raises(LanesError) as info:
            runner.run_experiment(exp, out, text, progress=kill_one)
    assert time.monotonic() - started < 30
    assert f"node {killed['node'][:8]}" in info.value.message
    assert "a load generator on 127.0.0.1" in info.value.message
    assert not (out / "runs" / "loop" / "L0-r1.json").exists()  # nothing partial as complete
    assert not ray.is_initialized()  # the pool closed and left the cluster


def test_more_machines_than_nodes_is_one_clear_error(cluster, corpus):
    with pytest.raises(LanesError, match=r"cluster\.machines = 9: the Ray cluster at .* has 3"):
        Pool(Cluster(ray=cluster, machines=9), ["m"], {"m": corpus})
    assert not ray.is_initialized()


def test_a_result_from_each_node_is_a_load_engine_result(cluster, corpus):
    """The actor's result is the engine's JSON, as a local generator's."""
    pool = Pool(Cluster(ray=cluster, machines=1), ["m"], {"m": corpus})
    try:
        with serve() as srv:
            load = {"rate": 50.0, "concurrency": None, "arrival": "constant", "cv": 3.0,
                    "trace": None, "segment_s": 1.0, "warmup_s": 0.0, "measure_s": 0.5,
                    "seed": 1}  # fmt: skip
            (stream,) = generators.split(load, [1.0], connections=2)
            spec = generators.spec_for(url=srv.url, model="m", corpus="-", stream=stream,
                                       arrival="constant", timeout_s=5.0, warmup_s=0.0,
                                       start_unix=generators.start_time())  # fmt: skip
            (result,), _ = pool.launch([(0, spec)], 30.0, closed=False)
    finally:
        pool.close()
    assert isinstance(result, Result) and result.data["model"] == "m"
    assert result.data["scheduled"] == 25 and result.requests == 25
