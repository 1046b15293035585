"""``[cluster]`` in an experiment file and ``--ray``: parsed and checked without Ray."""

from __future__ import annotations

import pytest

from lanes.errors import EXPERIMENT_INVALID, LanesError
from lanes.lab.experiment import Cluster, parse_experiment

BASE = """
name = "spread"
[[variant]]
name = "up"
url = "http://127.0.0.1:8000"
[workload]
mix = [{model = "char_cnn", weight = 1}]
levels = [100]
slo_ms = 100
"""


def test_a_cluster_table_is_read_with_its_defaults():
    assert parse_experiment(BASE).cluster is None
    exp = parse_experiment(BASE + '[cluster]\nray = "auto"\n')
    assert exp.cluster == Cluster(ray="auto", machines=None)
    exp = parse_experiment(
        BASE + '[cluster]\nray = "10.0.0.1:6379"\nmachines = 3\nmax_late_sends = 0.01\n'
        "max_clock_offset_ms = 2\n"
    )
    assert exp.cluster == Cluster("10.0.0.1:6379", 3, 0.01, 2.0)


def test_ray_on_the_command_line_overrides_the_file():
    assert parse_experiment(BASE).with_ray("127.0.0.1:6379").cluster == Cluster("127.0.0.1:6379")
    exp = parse_experiment(BASE + "[cluster]\nmachines = 2\n").with_ray("auto")
    assert exp.cluster == Cluster("auto", 2)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("rays = 'auto'", "cluster.rays: unknown key; allowed: ray, machines, max_late_sends"),
        ("ray = ''", "cluster.ray = '': allowed: 'auto' or a Ray address"),
        ("ray = 6379", "cluster.ray = 6379: allowed: 'auto' or a Ray address"),
        ("machines = 0", "cluster.machines = 0: allowed: a whole number >= 1"),
        ("max_late_sends = 2", "cluster.max_late_sends = 2: allowed: a number >= 0 and <= 1"),
        ("max_clock_offset_ms = 0", "cluster.max_clock_offset_ms = 0: allowed: a number > 0"),
    ],
)
def test_a_bad_cluster_key_is_one_line_naming_it(table, message):
    with pytest.raises(LanesError) as info:
        parse_experiment(BASE + "[cluster]\n" + table + "\n")
    assert info.value.code == EXPERIMENT_INVALID
    assert message in info.value.message


def test_cluster_must_be_a_table():
    with pytest.raises(LanesError, match="cluster = 'auto': not a table"):
        parse_experiment(BASE.replace('name = "spread"', 'name = "spread"\ncluster = "auto"'))


def test_without_ray_a_cluster_run_is_one_clear_error(monkeypatch):
    import sys

    from lanes.errors import MISSING_DEPENDENCY
    from lanes.lab import cluster

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(LanesError) as info:
        cluster.connect("auto")
    assert info.value.code == MISSING_DEPENDENCY
    assert "pip install 'lanes[ray]'" in info.value.message


def test_the_report_lists_the_runs_left_out():
    from lanes.lab import report

    assert report._behind({}) == ""
    html = report._behind({"behind": [{"id": "a/L0-r1", "reasons": ["n1: late <sends>"]}]})
    assert "a/L0-r1: n1: late &lt;sends&gt;" in html and "no figure below includes" in html
