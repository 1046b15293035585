"""The fleet's pure parts: the configuration's checks and the placement rule (no Ray)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lanes.errors import BAD_ARGUMENT, LanesError
from lanes.fleet.config import AUTOMATIC_DEVICES, FleetConfig, check, serve_options
from lanes.fleet.placement import Node, nodes_from_ray, plan

CPU_NODES = [Node("b", "10.0.0.2", 0), Node("a", "10.0.0.1", 0), Node("c", "10.0.0.1", 0)]
GPU_NODES = [Node("g1", "10.0.0.5", 8), Node("g2", "10.0.0.6", 3)]


@pytest.mark.parametrize(
    ("nodes", "config", "expected"),
    [
        # one member per node, ordered by IP then id, devices as given
        (CPU_NODES, FleetConfig(devices="sim:2"), [("a", 0, "sim:2", 0), ("c", 0, "sim:2", 0),
                                                  ("b", 0, "sim:2", 0)]),
        # nodes sharing an IP take consecutive ports; another IP starts again at P
        (CPU_NODES, FleetConfig(devices="cpu", port=9000), [("a", 0, "cpu", 9000),
                                                           ("c", 0, "cpu", 9001),
                                                           ("b", 0, "cpu", 9000)]),
        # auto on GPU nodes: one member with all the node's GPUs
        (GPU_NODES, FleetConfig(), [("g1", 8, "auto", 0), ("g2", 3, "auto", 0)]),
        # groups of 2: 8 GPUs make 4 members, 3 GPUs one (one left over)
        (GPU_NODES, FleetConfig(gpus_per_member=2, port=8000),
         [("g1", 2, "auto", 8000), ("g1", 2, "auto", 8001), ("g1", 2, "auto", 8002),
          ("g1", 2, "auto", 8003), ("g2", 2, "auto", 8000)]),
        # gpu-like is planned as auto: the node's GPUs
        (GPU_NODES, FleetConfig(devices="gpu-like"), [("g1", 8, "gpu-like", 0),
                                                      ("g2", 3, "gpu-like", 0)]),
        (CPU_NODES[:1], FleetConfig(devices="gpu-like"), [("b", 0, "gpu-like", 0)]),
        # an explicit spec on a GPU node asks Ray for no GPU
        (GPU_NODES[:1], FleetConfig(devices="sim:4"), [("g1", 0, "sim:4", 0)]),
        # a group larger than the node: no member there
        (GPU_NODES, FleetConfig(gpus_per_member=4), [("g1", 4, "auto", 0), ("g1", 4, "auto", 0)]),
        ([], FleetConfig(), []),
    ],
)  # fmt: skip
def test_plan(nodes, config, expected):
    slots = plan(nodes, config)
    assert [(s.node_id, s.gpus, s.devices, s.port) for s in slots] == expected
    assert [s.index for s in slots] == list(range(len(slots)))


def test_the_fleet_plans_the_devices_lanes_serve_resolves_on_its_node():
    from lanes.serving import devices

    assert set(AUTOMATIC_DEVICES) == set(devices.AUTOMATIC)


def test_nodes_from_ray_keeps_alive_nodes_and_counts_gpus():
    ip = "127.0.0.1"
    entries = [
        {"NodeID": "x", "NodeManagerAddress": ip, "Alive": True, "Resources": {"GPU": 2.0}},
        {"NodeID": "y", "NodeManagerAddress": ip, "Alive": False, "Resources": {}},
        {"NodeID": "z", "NodeManagerAddress": ip, "Alive": True, "Resources": {"CPU": 1}},
    ]
    assert nodes_from_ray(entries) == [Node("x", "127.0.0.1", 2), Node("z", "127.0.0.1", 0)]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (FleetConfig(name="a b"), "--name 'a b'"),
        (FleetConfig(port=70000), "--port 70000: out of range"),
        (FleetConfig(gpus_per_member=0), "--gpus-per-member 0: out of range"),
        (FleetConfig(max_restarts=-2), "--max-restarts -2: out of range"),
        (FleetConfig(ready_timeout_s=0), "--ready-timeout 0: out of range"),
        (FleetConfig(models=Path("/no/such/repo")), "--models /no/such/repo: no such folder"),
        (FleetConfig(serve_args=("--port", "1")), "lanes serve option '--port'"),
        (FleetConfig(serve_args=("--devices=sim:1",)), "lanes serve option '--devices=sim:1'"),
        (FleetConfig(serve_args=("--policy", "nope")), "lanes serve options: --policy = 'nope'"),
        (FleetConfig(serve_args=("--bogus",)), "lanes serve options: unrecognized arguments"),
        (FleetConfig(devices="gpu:1"), "lanes serve options: --devices 'gpu:1'"),
    ],
)
def test_check_names_the_bad_value(config, message):
    with pytest.raises(LanesError) as err:
        check(config)
    # lanes serve's own codes pass through (bad_devices, unknown_policy, ...)
    assert err.value.code == BAD_ARGUMENT or message.startswith("lanes serve options: ")
    assert message in err.value.message
    assert "\n" not in err.value.message


def test_serve_options_pass_through_and_spread_metrics_and_grpc_ports(tmp_path):
    config = FleetConfig(models=tmp_path, serve_args=("--policy", "fifo"))
    assert check(config) is config
    assert serve_options(config) == [
        "--models", str(tmp_path), "--metrics-port", "0", "--grpc-port", "0", "--policy", "fifo",
    ]  # fmt: skip
    own = FleetConfig(serve_args=("--metrics-port", "off", "--grpc-port", "9001"))
    assert serve_options(own) == ["--metrics-port", "off", "--grpc-port", "9001"]


def test_without_ray_lanes_fleet_says_how_to_install_it_and_nothing_imports_ray():
    code = (
        "import sys; sys.modules['ray'] = None\n"  # import ray now fails as if not installed
        "from lanes.cli import main\n"
        "status = main(['fleet', 'status'])\n"
        "import lanes.fleet, lanes.cli.serve\n"
        "print('ray imported' if sys.modules.get('ray') is not None else 'no ray')\n"
        "sys.exit(status)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2, done.stderr
    need = "lanes fleet needs Ray: pip install 'lanes[ray]'"
    assert done.stderr == f"lanes fleet status: error: {need}\n"
    assert done.stdout == "no ray\n"


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["fleet", "up", "--bogus"], "lanes: error: unrecognized arguments: --bogus"),
        (["fleet", "up", "extra"],
         "lanes fleet up: error: unrecognized arguments: extra (lanes serve options go after --)"),
        (["fleet", "up", "--", "--port", "5"],
         "lanes fleet up: error: lanes serve option '--port': the fleet sets it for each member; "
         "use lanes fleet's --host, --port or --devices"),
        (["fleet", "up", "--max-restarts", "-5"],
         "lanes fleet up: error: --max-restarts -5: out of range; allowed: from 0 to 1000"),
        (["fleet", "down", "--drain-timeout", "-1"],
         "lanes fleet down: error: --drain-timeout -1: at least 0"),
        (["fleet", "status", "--address", "nowhere"],
         "lanes fleet status: error: --address 'nowhere': not auto or HOST:PORT"),
    ],
)  # fmt: skip
def test_bad_command_lines_fail_in_one_line_before_any_cluster(argv, line, capsys):
    from lanes.cli import main

    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines()[-1] == line
