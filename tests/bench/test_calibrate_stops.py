"""``bench/calibrate/stops.py``: the host's stops, read by a spinning probe.

The rule that tells a stop from a wait is checked on gaps given by hand; a real probe beside a
burner on its own core must see that core shared by the guest's scheduler (waits, not stops);
the command line refuses what it cannot probe."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CALIBRATE = ROOT / "bench" / "calibrate"


@pytest.fixture
def stops(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    monkeypatch.syspath_prepend(str(CALIBRATE))
    return importlib.import_module("stops")


def test_a_gap_the_probe_did_not_wait_through_is_a_stop(stops: types.ModuleType) -> None:
    # (at s, length µs, wait grown µs): no wait, a wait of the whole gap, just under and at half
    gaps = [(0.1, 800.0, 0.0), (0.2, 4000.0, 3990.0), (0.3, 1000.0, 499.0), (0.4, 1000.0, 500.0)]
    assert stops.classify(gaps) == ["stop", "wait", "stop", "wait"]


def test_the_summary_counts_each_kind_over_the_window(stops: types.ModuleType) -> None:
    run = {
        "cpu": 1,
        "seconds": 2.0,
        "readings": 10**6,
        "gaps": [(0.1, 1000.0, 0.0), (0.5, 3000.0, 0.0), (0.9, 2000.0, 2000.0)],
    }
    s = stops.summary(run, steal=0.01)
    assert (s["stops"]["count"], s["stops"]["total_ms"], s["stops"]["per_s"]) == (2, 4.0, 1.0)
    assert s["stops"]["share"] == pytest.approx(0.002)
    assert s["stops"]["length_ms"]["max"] == 3.0 and s["stops"]["length_ms"]["p50"] == 3.0
    assert (s["waits"]["count"], s["waits"]["total_ms"]) == (1, 2.0)
    assert s["steal_share"] == pytest.approx(0.005)
    assert "| 1 | stops | 2 | 1.00 | 4.0 | 0.0020 |" in stops.table({"cores": [s]})


def test_a_burner_on_the_probes_core_makes_waits_not_stops(stops: types.ModuleType) -> None:
    cpu = min(os.sched_getaffinity(0))
    burn = f"import os, time\nos.sched_setaffinity(0, {{{cpu}}})\nend = time.monotonic() + 3\n"
    burner = subprocess.Popen([sys.executable, "-c", burn + "while time.monotonic() < end: pass\n"])
    try:
        result = stops.probe([cpu], seconds=1.0)
    finally:
        burner.kill()
        burner.wait()
    core = result["cores"][0]
    # the guest's scheduler shares the core between the two: the probe waits about half the time
    assert core["waits"]["share"] > 0.2, core
    assert core["waits"]["share"] > 3 * core["stops"]["share"], core
    assert len(result["gaps"][str(cpu)]) == core["waits"]["count"] + core["stops"]["count"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--cpus", "0,x"], "--cpus wants numbers separated by commas"),
        (["--cpus", "4096"], "is not one this process may run on"),
        (["--seconds", "0"], "must be positive"),
    ],
)
def test_the_command_line_refuses_what_it_cannot_probe(args: list[str], says: str) -> None:
    done = subprocess.run(
        [sys.executable, str(CALIBRATE / "stops.py"), *args], capture_output=True, text=True
    )
    assert done.returncode == 2 and says in done.stderr, done.stderr
