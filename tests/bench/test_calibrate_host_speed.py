"""``bench/calibrate/host_speed.py``: the host's speed process read off a grid's timelines.

Synthetic grids with a known process (epochs of exponential length, a lognormal factor per
epoch, calls' own noise on top) check that the fit finds it; a steady host gives no process;
the command line refuses a folder without timelines."""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import random
import statistics
import types
from pathlib import Path

import pytest

CALIBRATE = Path(__file__).resolve().parents[2] / "bench" / "calibrate"


@pytest.fixture
def hs(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    monkeypatch.syspath_prepend(str(CALIBRATE))
    return importlib.import_module("host_speed")


def trace(rng: random.Random, sigma: float, tau_ms: float, seconds: float) -> list[dict]:
    """A run's device timeline: Poisson calls (400/s) of two models whose measured time is a
    base cost x the host's factor then x their own lognormal noise (cv about 0.2)."""
    events, t, epoch_end, log_factor = [], 0.0, 0.0, 0.0
    while t < seconds * 1e3:
        t += rng.expovariate(0.4)  # ms
        while t >= epoch_end:
            epoch_end += rng.expovariate(1 / tau_ms) if tau_ms else math.inf
            log_factor = rng.gauss(-(sigma**2) / 2, sigma)
        model, base = ("a", 0.7) if rng.random() < 0.6 else ("b", 5.0)
        ms = base * math.exp(log_factor + rng.gauss(-0.02, 0.2))
        args = {"model": model, "batch_size": 1, "measured_ms": ms}
        events.append({"ph": "X", "ts": t * 1e3, "dur": ms * 1e3, "args": args})
    return events


def grid(root: Path, sigma: float, tau_ms: float, runs: int = 8, seed: int = 1) -> Path:
    rng = random.Random(seed)
    for variant in ("fifo", "sjf"):
        d = root / "runs" / variant
        d.mkdir(parents=True)
        for r in range(1, runs // 2 + 1):
            for level in (0, 1, 2):
                # level 2 is far noisier: it must not be read by default
                s = sigma if level < 2 else 0.5
                events = {"traceEvents": trace(rng, s, tau_ms, 5.0)}
                (d / f"L{level}-r{r}.trace.json").write_text(json.dumps(events))
    return root


def test_the_fit_finds_the_process(hs, tmp_path):
    got = hs.read(grid(tmp_path, sigma=0.1, tau_ms=50.0))
    assert got.runs == 16  # two variants x 4 repeats x the two lightest levels
    assert 0.07 < got.sigma < 0.13, got
    assert 25 < got.speed_ms < 100, got
    assert got.speed_cv == pytest.approx(math.sqrt(math.expm1(got.sigma**2)), abs=1e-3)
    # windows' means vary more than independent draws would make them
    assert got.ratio[100] > 1.5, got.ratio


def test_a_steady_host_has_no_slow_spells(hs, tmp_path):
    got = hs.read(grid(tmp_path, sigma=0.0, tau_ms=0.0))
    # what excess is left is noise: the fit is either none or negligible
    assert got.sigma < 0.03, got
    assert all(0.7 < r < 1.4 for r in got.ratio.values()), got.ratio


def test_the_levels_read_can_be_chosen(hs, tmp_path):
    root = grid(tmp_path, sigma=0.05, tau_ms=50.0)
    noisy = hs.read(root, [2])
    assert noisy.runs == 8
    assert noisy.sigma > 0.2, noisy


def test_the_excess_is_beyond_independent_draws(hs):
    rng = random.Random(3)
    calls = [(float(i), rng.gauss(0, 0.2)) for i in range(20_000)]
    assert abs(hs.excess(calls, 50)) < 0.0005
    shifted = [(t, y + (0.1 if (t // 500) % 2 else -0.1)) for t, y in calls]
    assert hs.excess(shifted, 50) == pytest.approx(0.01, rel=0.2)
    assert hs.excess([], 50) is None
    assert hs.excess([(0.0, 0.1)] * 5, 50) is None  # one window


def test_the_shape_of_a_window(hs):
    assert hs.shape(0.0) == 1.0
    assert hs.shape(1e-3) == pytest.approx(1.0, abs=1e-3)
    assert hs.shape(100.0) == pytest.approx(2 * 99 / 100**2, rel=1e-6)


def test_the_command_line(hs, tmp_path, capsys):
    assert hs.main([str(tmp_path)]) == 2
    assert "no runs/*/L*-r*.trace.json" in capsys.readouterr().err
    root = grid(tmp_path / "g", sigma=0.1, tau_ms=50.0, runs=2)
    out = tmp_path / "fit.json"
    assert hs.main([str(root), "--levels", "0", "--json", str(out)]) == 0
    fit = json.loads(out.read_text())
    assert fit["runs"] == 2 and fit["speed_cv"] > 0
    assert "speed_cv = " in capsys.readouterr().out
    with pytest.raises(SystemExit):
        hs.main([str(root), "--levels", "zero"])


def warm_trace(rng: random.Random) -> list[dict]:
    """One device's calls of model ``a`` on a steady host: a call that starts within 0.2 ms of
    the device's previous call's end takes 0.5 ms of CPU, a cold one 0.8 (warm caches,
    round20/warm.py); each waits a random while for a core on top (measured_ms)."""
    events, t = [], 0.0
    for _ in range(2000):
        t += 0.1 if rng.random() < 0.5 else 5.0  # gap since the last call's end, ms
        cpu = 0.5 if t - (events[-1]["end"] if events else -1e9) <= 0.2 else 0.8
        wall = cpu + rng.expovariate(1 / 0.3)
        args = {"model": "a", "batch_size": 1, "cpu_ms": cpu, "measured_ms": wall}
        events.append({"ph": "X", "tid": 0, "ts": t * 1e3, "dur": wall * 1e3, "args": args})
        t += wall
        events[-1]["end"] = t
    return events


def test_cpu_and_warm_take_the_wait_and_the_warmth_out_of_the_slowdown(hs):
    events = warm_trace(random.Random(3))
    spread = {
        (cpu, warm): statistics.pvariance(y for _, y in hs.slowdowns(events, cpu=cpu, warm=warm))
        for cpu in (False, True)
        for warm in (False, True)
    }
    # the wall time carries the wait for a core; the CPU time the warm/cold split; with both
    # taken out the steady host shows no slowdown at all
    assert spread[(False, False)] > spread[(True, False)] > 0.05
    assert spread[(True, True)] < 1e-9
    # a device's first call has no previous one: it is left out with --warm
    assert len(hs.slowdowns(events, cpu=True, warm=True)) == len(events) - 1


def spread_grid(root: Path, run_sd: float, runs: int = 3, groups: int = 40, seed: int = 2) -> Path:
    """A grid's timelines.json and run files: each run's calls cost a base x one factor of the
    run's (log sd ``run_sd``) x their cell's noise, two models at two batch sizes, at levels 0
    and 1; level 2's runs spread far more and must not be read by default."""
    rng = random.Random(seed)
    timelines: dict[str, dict] = {}
    for g in range(groups):
        variant, level = f"v{g // 2}", g % 2
        for level_, sd in ((level, run_sd), (2, 0.5)):
            for r in range(1, runs + 1):
                factor = math.exp(rng.gauss(0, sd))
                models = {
                    m: {
                        str(b): {"batches": 50, "cpu_ms": base * b * factor * rng.gauss(1, 0.002)}
                        for b in (1, 2)
                    }
                    for m, base in (("a", 0.7), ("b", 5.0))
                }
                models["rare"] = {"1": {"batches": 3, "cpu_ms": 100.0 * rng.random()}}
                key = f"{variant}/L{level_}-r{r}"
                timelines[key] = {"models": models}
                d = root / "runs" / variant
                d.mkdir(parents=True, exist_ok=True)
                (d / f"L{level_}-r{r}.json").write_text(json.dumps({"measure_s": 5.0}))
    (root / "timelines.json").write_text(json.dumps(timelines))
    return root


def test_the_runs_own_speed_is_the_spread_beyond_the_epochs(hs, tmp_path):
    one = spread_grid(tmp_path / "one", run_sd=0.05)
    alone = hs.between_runs([one], 0.0, 0.0)
    # The runs' spread is read back (cells with few batches left out, level 2 not read).
    assert alone.between_sd == pytest.approx(0.05, rel=0.15)
    assert alone.epochs_sd == 0 and alone.window_s == 5.0
    assert alone.speed_run_cv == pytest.approx(alone.between_sd, rel=0.01)
    # What 250 ms epochs of cv 0.1 make over 5 s windows comes off it.
    with_epochs = hs.between_runs([one], 0.1, 250.0)
    epochs = math.sqrt(math.log1p(0.01) * hs.shape(5000 / 250))
    assert with_epochs.epochs_sd == pytest.approx(epochs, abs=1e-4)
    want = math.sqrt(math.expm1(alone.between_sd**2 - epochs**2))
    assert with_epochs.speed_run_cv == pytest.approx(want, abs=2e-4)
    # Runs no more spread than the epochs make: no run factor.
    steady = spread_grid(tmp_path / "steady", run_sd=0.01, seed=3)
    assert hs.between_runs([steady], 0.1, 250.0).speed_run_cv == 0
    # Grids pool their runs.
    both = hs.between_runs([one, steady], 0.0, 0.0)
    assert both.runs == alone.runs * 2 and steady_between(hs, steady) < both.between_sd < 0.05


def steady_between(hs, grid: Path) -> float:
    return hs.between_runs([grid], 0.0, 0.0).between_sd


def test_between_runs_on_the_command_line(hs, tmp_path, capsys):
    root = spread_grid(tmp_path / "g", run_sd=0.05)
    out = tmp_path / "spread.json"
    assert hs.main([str(root), "--between-runs", "0.1,250", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["speed_run_cv"] > 0
    assert "speed_run_cv = " in capsys.readouterr().out
    assert hs.main([str(tmp_path), "--between-runs", "0.1,250"]) == 2
    assert "no timelines.json" in capsys.readouterr().err
    for bad in ("0.1", "x,250", "0.1,0", "-1,-1"):
        with pytest.raises(SystemExit):
            hs.main([str(root), "--between-runs", bad])
    with pytest.raises(SystemExit):  # several grids only with --between-runs
        hs.main([str(root), str(root)])


def test_the_simulators_timeline_is_read_as_the_labs(hs):
    """sim_events turns the simulator's device timeline into trace events: its speed process is
    read back near what the scenario sets, and with ``speed_cv_busy`` it reads deeper at a heavy
    load than at a light one, where one depth reads alike."""
    from lanes import sim
    from lanes.sim.scenario import Scenario

    base = Scenario.load(Path(__file__).resolve().parents[2] / "examples/scenarios/cpu-2core.toml")

    def cv(host_change: dict, load: float) -> float:
        sc = dataclasses.replace(base, host=dataclasses.replace(base.host, **host_change))
        runs = [hs.sim_events(sim.timeline(sc, "fifo", load, seed, 6_000)[1]) for seed in (1, 2)]
        return hs.read_runs(runs).speed_cv

    events = hs.sim_events(sim.timeline(base, "fifo", 0.5, 1, 2_000)[1])
    assert events and all(e["ph"] == "X" and e["args"]["measured_ms"] > 0 for e in events)
    flat = {"speed_cv": 0.15, "speed_ms": 250.0}
    deep = {"speed_cv": 0.02, "speed_ms": 250.0, "speed_cv_busy": 0.3}
    flat_light, flat_heavy = cv(flat, 0.25), cv(flat, 0.8)
    deep_light, deep_heavy = cv(deep, 0.25), cv(deep, 0.8)
    assert 0.08 < flat_light < 0.2 and 0.08 < flat_heavy < 0.2, (flat_light, flat_heavy)
    assert deep_heavy > deep_light + 0.05, (deep_light, deep_heavy)
    assert deep_heavy - deep_light > (flat_heavy - flat_light) + 0.04
