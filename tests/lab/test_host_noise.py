"""Host noise (lanes.lab.host_noise): the host's CPU over a window split between the server's
process tree, the lab's and the rest, on real processes; and a lab run with a real neighbour
burning a core named as disturbed in the run file, the summary, the report and the terminal.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from lanes.lab import aggregate, host_noise, report, runner
from lanes.lab.experiment import parse_experiment

# a run is named disturbed, or not, by what the rest of this host did beside it
pytestmark = pytest.mark.alone

BURN = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end:\n    pass\n"


def burner(seconds: float) -> list[str]:
    return [sys.executable, "-c", BURN.format(s=seconds)]


@contextmanager
def neighbour(seconds: float) -> Iterator[psutil.Process]:
    """A process burning a core for ``seconds`` that is not under this one: started by a shell
    that exits at once, so the burner is handed to the host's reaper, as a tenant's job is."""
    sh = subprocess.run(
        ["sh", "-c", f"{shlex.join(burner(seconds))} >/dev/null 2>&1 & echo $!"],
        capture_output=True,
        text=True,
        check=True,
        timeout=10,
    )
    proc = psutil.Process(int(sh.stdout.strip()))
    try:
        assert proc.pid not in {p.pid for p in psutil.Process().children(recursive=True)}
        yield proc
    finally:
        proc.kill()


def test_the_windows_cpu_goes_to_the_server_the_lab_and_the_rest() -> None:
    """A server whose child burns, a lab child that burns and a neighbour that burns, each for
    1.5 s: each one's time lands with its owner and nowhere else."""
    server = subprocess.Popen(
        ["sh", "-c", f"{shlex.join(burner(1.5))}; sleep 0.2"],
    )
    lab = subprocess.Popen(burner(1.5))
    try:
        with neighbour(1.5):
            before = host_noise.host_sample(server.pid)
            time.sleep(1.8)  # the burners' 1.5 s and some: the window under test
            after = host_noise.host_sample(server.pid)
    finally:
        server.wait(timeout=10)
        lab.wait(timeout=10)
    assert before is not None and after is not None
    got = host_noise.noise(before, after, 1.8)
    # each burner had its core for part of 1.5 s on a host of 2 shared with the others
    assert got["server_tree_cpu_s"] is not None and got["server_tree_cpu_s"] > 0.3, got
    assert got["lab_cpu_s"] is not None and got["lab_cpu_s"] > 0.3, got
    assert got["other_cpu_s"] is not None and got["other_cpu_s"] > 0.3, got
    # the three burners' time fits in the cores' time, counted once
    total = got["server_tree_cpu_s"] + got["lab_cpu_s"] + got["other_cpu_s"]
    assert total <= 1.8 * psutil.cpu_count() * 1.1, got
    assert got["other_cores"] == pytest.approx(
        (got["other_cpu_s"] + got["steal_cpu_s"]) / 1.8  # type: ignore[operator]
    )


def sample(busy: float, steal: float, server: float | None, lab: float | None):
    return host_noise.HostSample(busy_s=busy, steal_s=steal, server_s=server, lab_s=lab)


def test_noise_is_what_the_host_spent_beyond_the_server_and_the_lab() -> None:
    got = host_noise.noise(sample(10, 1, 2, 1), sample(14, 1.5, 4.5, 1.5), 5.0)
    assert got == {
        "server_tree_cpu_s": 2.5,
        "lab_cpu_s": 0.5,
        "other_cpu_s": 1.0,
        "steal_cpu_s": 0.5,
        "other_cores": 0.3,
    }
    # the processes' clocks and the host's differ by a few per cent: never below 0
    assert host_noise.noise(sample(10, 0, 2, 1), sample(12, 0, 4, 1.2), 5.0)["other_cpu_s"] == 0


def test_without_the_servers_process_the_rest_is_not_claimed() -> None:
    """A ``url`` variant's server may run on this host: its CPU cannot be told from a
    neighbour's, so no ``other`` is given, and no sample at all gives nothing."""
    got = host_noise.noise(sample(10, 0, None, 1), sample(14, 0, None, 1.5), 5.0)
    assert got["lab_cpu_s"] == 0.5 and got["steal_cpu_s"] == 0
    assert got["other_cpu_s"] is None and got["other_cores"] is None
    assert set(host_noise.noise(None, None, 5.0).values()) == {None}


def test_with_the_load_on_a_cluster_the_rest_is_not_claimed() -> None:
    """A ``[cluster]``'s generators run in Ray's workers, not under the runner: no lab figure is
    taken, so no ``other`` either; the server's tree and the steal still are."""
    server = subprocess.Popen(burner(0.3))
    try:
        got = host_noise.host_sample(server.pid, lab=False)
    finally:
        server.wait(timeout=10)
    assert got is not None and got.lab_s is None and got.server_s is not None
    noise = host_noise.noise(got, got, 1.0)
    assert noise["other_cpu_s"] is None and noise["other_cores"] is None
    assert noise["server_tree_cpu_s"] == 0 and noise["steal_cpu_s"] == 0


@pytest.mark.parametrize(
    ("server", "flagged"),
    [
        ({"other_cores": host_noise.DISTURBED_CORES}, host_noise.DISTURBED_CORES),
        ({"other_cores": 0.099}, None),
        ({"other_cores": None}, None),
        ({}, None),
        (None, None),
    ],
)
def test_a_run_is_disturbed_from_a_tenth_of_a_core(server, flagged) -> None:
    assert host_noise.disturbed(server) == flagged


ONE_LEVEL = """
name = "noise"
[[variant]]
name = "fifo"
command = ["lanes", "serve", "--devices", "sim:2", "--policy", "fifo", "--port", "{port}",
           "--metrics-port", "{metrics_port}"]
[workload]
mix = [{ model = "char_cnn", weight = 1.0 }]
arrival = "poisson"
levels = [50]
warmup_s = 0.5
measure_s = 2
repeats = 1
slo_ms = 1000
[stability]
max_extensions = 0
"""


def test_a_run_beside_a_burning_neighbour_is_named_disturbed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exp = parse_experiment(ONE_LEVEL)
    out = tmp_path / "results"
    with neighbour(60.0):  # killed when the run is over
        runner.run_experiment(exp, out, ONE_LEVEL)
    server = json.loads((out / "runs" / "fifo" / "L0-r1.json").read_text())["server"]
    # the neighbour burned one of the cores through the window
    assert server["other_cores"] >= 0.3, server
    assert server["lab_cpu_s"] > 0 and server["steal_cpu_s"] >= 0
    # the server's tree is the server process (lanes serve has no children)
    assert server["server_tree_cpu_s"] == pytest.approx(server["process_cpu_s"], abs=0.1)
    summary = aggregate.aggregate(out)
    (row,) = summary["disturbed"]
    assert row["id"] == "fifo/L0-r1" and row["other_cores"] == round(server["other_cores"], 3)
    (level,) = summary["variants"]["fifo"]["levels"]
    assert level["other_cores"] == server["other_cores"]
    assert level["repeats"] == 1  # named, not left out
    page = report.build_report(out).html.read_text()
    assert "Runs disturbed by the host" in page and "fifo/L0-r1: " in page
    from lanes.cli.bench_run import print_diagnosis

    capsys.readouterr()
    print_diagnosis(out / "summary.json")
    printed = capsys.readouterr().out
    assert "disturbed by the rest of the host" in printed and "fifo/L0-r1 (" in printed
