"""``[profile]`` in an experiment: good tables parse, each bad key or value is one line naming
it, and a PID that does not exist is refused before anything runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lanes.diagnose.config import ProfileConfig
from lanes.diagnose.session import Session, check_pid
from lanes.errors import LanesError
from lanes.lab.experiment import parse_experiment

BASE = """
name = "t"
[[variant]]
name = "a"
command = ["lanes", "serve", "--port", "{port}"]
[workload]
mix = [{model = "char_cnn", weight = 1}]
levels = [100, 200, 300]
repeats = 3
slo_ms = 100
"""


def test_profile_table_parses_with_defaults() -> None:
    exp = parse_experiment(BASE + "[profile]\nlevels = [200]\nnative = true\n")
    assert exp.profile == ProfileConfig(levels=(200.0,), native=True)
    assert exp.profile.wants(200, 1)
    assert not exp.profile.wants(200, 2)  # repeat 2 measures unprofiled
    assert not exp.profile.wants(300, 1)
    assert not exp.profile.wants(200, 1, probe=True)
    assert parse_experiment(BASE).profile is None
    every = parse_experiment(BASE + "[profile]\nrepeats = [1, 3]\n").profile
    assert every is not None and every.wants(100, 3) and every.levels is None


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("flame = true", "profile.flame: unknown key; allowed: levels, repeats"),
        ("levels = [250]", "profile.levels = 250: not a workload level; allowed: 100, 200, 300"),
        ("levels = []", "profile.levels = []: allowed: a list"),
        ("repeats = [4]", "profile.repeats = 4: allowed: 1 to workload.repeats = 3"),
        ("rate_hz = 5000", "profile.rate_hz = 5000: allowed: 1 to 1000"),
        ("interval_ms = 1", "profile.interval_ms = 1: allowed: a whole number >= 10"),
        ("stacks = 1", "profile.stacks = 1: allowed: true or false"),
        ("pid = 0", "profile.pid = 0: allowed: a whole number >= 1"),
    ],
)
def test_bad_profile_values_name_the_key(table: str, message: str) -> None:
    with pytest.raises(LanesError) as err:
        parse_experiment(BASE + "[profile]\n" + table + "\n")
    assert err.value.code == "experiment_invalid"
    assert message in str(err.value)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_pid_that_does_not_exist_is_one_clear_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    pid = _dead_pid()
    with pytest.raises(LanesError) as err:
        check_pid(pid)
    assert err.value.code == "bad_argument"
    assert str(err.value) == f"profile pid {pid}: no such process"
    with pytest.raises(LanesError):
        Session(ProfileConfig(), pid, tmp_path / "p")
