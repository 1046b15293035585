"""``bench/calibrate/replay.py`` and ``batch_sizes.py``: a lab run simulated with its own
arrivals and speed, and a model's batch sizes lab against simulated.

A synthetic grid (two repeats of ``fifo`` and ``sjf`` at one level, each with request spans and
a device timeline for cpu-2core.toml's three models) stands in for a lab grid; the simulator is
the real one, on examples/scenarios/cpu-2core.toml."""

from __future__ import annotations

import importlib
import json
import random
import types
from dataclasses import replace
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CALIBRATE = ROOT / "bench" / "calibrate"
SCENARIO = ROOT / "examples" / "scenarios" / "cpu-2core.toml"
MODELS = {"char_cnn": (0.6, 0.5), "line_rnn_zh": (0.25, 4.7), "line_rnn_en": (0.15, 2.3)}
"""Model → (share of the requests, CPU of a batch of one in ms)."""


@pytest.fixture
def replay(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    monkeypatch.syspath_prepend(str(CALIBRATE))
    return importlib.import_module("replay")


@pytest.fixture
def batch_sizes(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    monkeypatch.syspath_prepend(str(CALIBRATE))
    return importlib.import_module("batch_sizes")


def trace(rng: random.Random, rate: float, speed: float, lead_s: float = 0.0) -> dict:
    """Poisson requests over 3 s (``char_cnn`` alone for the first ``lead_s``), each with its
    model's span and its ``front`` span, and one call per request (every fourth a batch of 2)
    whose CPU is its model's x ``speed``."""
    events, t, rid = [], 0.0, 0
    while t < 3.0:
        t += rng.expovariate(rate)
        r, model = rng.random(), "char_cnn"
        for name, (share, _) in MODELS.items():
            if r < share:
                model = name
                break
            r -= share
        if t < lead_s and model != "char_cnn":
            continue
        rid += 1
        ts = t * 1e6
        args = {"total_ms": 5.0, "batch_size": 1}
        events.append(
            {"cat": "request", "ph": "b", "id": rid, "name": model, "ts": ts, "args": args}
        )
        events.append({"cat": "request", "ph": "b", "id": rid, "name": "front", "ts": ts})
        n = 2 if rid % 4 == 0 else 1
        cpu = MODELS[model][1] * n * speed
        job = {"model": model, "batch_size": n, "cpu_ms": cpu, "measured_ms": cpu * 1.1}
        events.append(
            {"ph": "X", "cat": "job", "name": model, "ts": ts, "dur": cpu * 1.2e3, "args": job}
        )
    return {"traceEvents": events}


def grid(root: Path, rate: float = 300.0, speeds: tuple[float, ...] = (1.0, 1.1)) -> Path:
    rng = random.Random(7)
    for variant in ("fifo", "sjf"):
        folder = root / "runs" / variant
        folder.mkdir(parents=True)
        for r, speed in enumerate(speeds, start=1):
            result = {"offered": {"rate_rps": rate}, "load": {"latency_ms": {"p99": 20.0 + r}}}
            (folder / f"L0-r{r}.json").write_text(json.dumps(result))
            (folder / f"L0-r{r}.trace.json").write_text(json.dumps(trace(rng, rate, speed, 0.3)))
    return root


def test_arrivals_are_cut_to_the_span_every_model_covers(replay):
    got = replay.arrivals(trace(random.Random(1), 300.0, 1.0, lead_s=0.5))
    assert set(got) == set(MODELS)
    assert min(ts[0] for ts in got.values()) == 0.0
    # char_cnn alone for the first 0.5 s: that part is not replayed, the span starts with the
    # first arrival of a model that came later
    assert any(ts[0] == 0.0 for m, ts in got.items() if m != "char_cnn")
    span = max(ts[-1] for ts in got.values())
    assert 2.3 < span < 2.55, span
    n = sum(len(ts) for ts in got.values())
    assert 0.8 * 300 * span < n < 1.2 * 300 * span


def test_a_runs_speed_is_its_calls_cpu_over_the_grids(replay, tmp_path):
    runs = replay.load(grid(tmp_path, speeds=(1.0, 1.2)), ["fifo"], None)
    means = replay.mean_cpu(runs)
    speeds = sorted(round(replay.speed(r, means), 2) for r in runs)
    # half the calls at 1.0 and half at 1.2: the grid's mean is 1.1 of the base
    assert speeds[0] == pytest.approx(1.0 / 1.1, abs=0.03)
    assert speeds[-1] == pytest.approx(1.2 / 1.1, abs=0.03)


def test_the_speed_scales_every_call_and_the_arrivals_replace_poisson(replay, tmp_path):
    from lanes.sim.scenario import Scenario, Trace

    base = Scenario.load(SCENARIO)
    # the calls x the speed, as hour_speed.at_hour (tests/bench/test_calibrate_hour_speed.py)
    fast = replay.with_speed(base, 1.5)
    assert fast == importlib.import_module("hour_speed").at_hour(base, 1.5)
    assert fast.services[0].gpu.mean_ms == pytest.approx(1.5 * base.services[0].gpu.mean_ms)
    run = replay.load(grid(tmp_path), ["fifo"], None)[0]
    replayed, rate = replay.with_arrivals(base, run)
    assert all(isinstance(s.arrival, Trace) for s in replayed.services)
    assert replayed.services[0].arrival.times == run.arrivals["char_cnn"]
    # each service at its own rate in the run, so that the simulator rescales nothing
    for s in replayed.services:
        times = run.arrivals[s.name]
        assert s.share == pytest.approx((len(times) - 1) / (times[-1] - times[0]))
    assert rate == pytest.approx(sum(s.share for s in replayed.services))
    assert 0.8 * 300 < rate < 1.2 * 300


def test_the_speed_over_time_is_its_calls_cpu_bin_by_bin(replay):
    # 4 s of arrivals; char_cnn's calls (1 ms each on the grid) run 1.0 for the first second,
    # none in the second (the factor holds), 1.5 from 2 s on; a pair with no grid mean is left out
    arrivals = {"char_cnn": tuple(i * 0.01 for i in range(401))}
    calls, starts = [], []
    for i in range(400):
        t = i * 0.01
        if 1.0 <= t < 2.1:
            continue
        calls.append(("char_cnn", 1, 1.0 if t < 1.0 else 1.5))
        starts.append(t)
    calls.append(("char_cnn", 8, 99.0))  # no grid mean for batches of 8: not counted
    starts.append(0.5)
    calls.append(("char_cnn", 1, 50.0))  # before the replayed span: not counted
    starts.append(-0.2)
    run = replay.Run("fifo/L0-r1", "fifo", 100.0, 20.0, arrivals, tuple(calls), tuple(starts))
    series, width = replay.speed_series(run, {("char_cnn", 1): 1.0}, 0.5)
    # the bins end with the simulator's loop: the span (4 s) and one mean gap (0.01 s)
    assert len(series) * width == pytest.approx(4.01)
    assert len(series) == 8
    assert series[:2] == pytest.approx([1.0, 1.0])
    assert series[2:4] == pytest.approx([1.0, 1.0])  # no calls: the bin before's
    assert series[4:] == pytest.approx([1.5] * 4)


def test_the_speed_over_time_reaches_the_simulator(replay, tmp_path):
    from lanes.sim.scenario import Scenario

    committed = Scenario.load(SCENARIO)
    # without the committed file's drawn speed process, which the series replaces
    base = replace(committed, host=replace(committed.host, speed_cv=0.0, speed_ms=0.0))
    run = replay.load(grid(tmp_path), ["fifo"], None)[0]
    means = replay.mean_cpu(replay.load(tmp_path, ["fifo", "sjf"], None))
    steady = replay.replayed(base, run, 1.0, 1, 3000, ([1.0], 0.003))
    slow = replay.replayed(base, run, 1.0, 1, 3000, ([1.0, 2.5], 0.2))
    # a series of ones is the steady host: the same figure as the arrivals alone
    assert steady["arrivals + speed over time"] == steady["arrivals"]
    assert slow["arrivals + speed over time"] > 1.2 * slow["arrivals"]
    series, _ = replay.speed_series(run, means, 0.25)
    assert series and all(0.5 < f < 2.0 for f in series)


def test_the_speed_base_can_be_the_scenarios_calls(replay, tmp_path):
    from lanes.sim.scenario import Scenario

    base = Scenario.load(SCENARIO)
    costs = replay.scenario_costs(base)
    zh = next(s for s in base.services if s.name == "line_rnn_zh")
    assert costs[("line_rnn_zh", 1)] == zh.gpu.mean_ms
    assert zh.batching is not None
    assert all(costs[("line_rnn_zh", n)] == ms for n, ms in zh.batching.batch_ms)
    # a run whose calls took 1.5x the scenario's: its speed against the scenario is 1.5
    run = replay.Run(
        "fifo/L0-r1",
        "fifo",
        100.0,
        20.0,
        {"line_rnn_zh": (0.0, 1.0)},
        (("line_rnn_zh", 1, 1.5 * zh.gpu.mean_ms), ("line_rnn_zh", 3, 99.0)),
        (0.1, 0.2),
    )
    assert replay.speed(run, costs) == pytest.approx(1.5)
    out = tmp_path / "replay.md"
    args = [str(grid(tmp_path / "g")), "--scenario", str(SCENARIO), "--variants", "fifo"]
    assert replay.main([*args, "--seeds", "1", "--requests", "2000", "--speed-base", "scenario",
                        "--markdown", str(out)]) == 0  # fmt: skip
    assert "speed against the scenario's calls" in out.read_text()


def test_the_command_tables_every_run_and_level(replay, tmp_path, capsys):
    out = tmp_path / "replay.md"
    args = [str(grid(tmp_path / "g")), "--scenario", str(SCENARIO), "--variants", "fifo"]
    assert replay.main([*args, "--seeds", "1", "--requests", "3000", "--markdown", str(out)]) == 0
    text = out.read_text()
    assert "| fifo/L0-r1 | 300 |" in text and "| fifo/L0-r2 | 300 |" in text
    assert "| fifo | 300 | 21.5 |" in text  # the lab's mean p99 over the two repeats (21, 22)
    assert "sjf/" not in text  # the sjf runs give the mean CPU only
    assert "sim arrivals + speed over time ms" in text and "bins of 250 ms" in text
    assert capsys.readouterr().out.strip() == text.strip()


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--variants", "fifo,lifo"], "lifo not one of"),
        (["--rates", "600,fast"], "comma-separated numbers"),
        (["--bin-ms", "0"], "--bin-ms must be above 0"),
        (["--speed-base", "hour"], "invalid choice: 'hour'"),
    ],
)
def test_wrong_input_is_named(replay, tmp_path, capsys, extra, says):
    with pytest.raises(SystemExit) as err:
        replay.main([str(grid(tmp_path)), "--scenario", str(SCENARIO), *extra])
    assert err.value.code == 2
    assert says in capsys.readouterr().err


def test_a_folder_without_runs_is_refused(replay, tmp_path, capsys):
    with pytest.raises(SystemExit):
        replay.main([str(tmp_path), "--scenario", str(SCENARIO)])
    assert "holds no runs/ folder" in capsys.readouterr().err


def test_shares_and_calls_per_size(batch_sizes):
    s = batch_sizes.Sizes()
    s.add(1, 6, 6 * 5.0)
    s.add(2, 2, 2 * 9.0)
    assert s.share(1) == pytest.approx(0.6) and s.share(2) == pytest.approx(0.4)
    assert s.mean_call(2) == pytest.approx(9.0) and s.mean_call(8) is None


def test_the_lab_and_the_simulator_per_size(batch_sizes, tmp_path):
    g = grid(tmp_path)
    lab = batch_sizes.lab(g, "fifo", 300.0, "line_rnn_zh")
    assert set(lab.batches) == {1, 2}
    # every fourth call a batch of two: about 2 x 1/4 / (2 x 1/4 + 3/4) = 0.4 of the requests
    assert 0.3 < lab.share(2) < 0.5
    from lanes.sim.scenario import Scenario

    sim = batch_sizes.simulated(Scenario.load(SCENARIO), "fifo", 300.0, "line_rnn_zh", 1, 4000)
    assert sim.batches and sum(sim.share(n) for n in sim.batches) == pytest.approx(1.0)
    one = sim.mean_call(1)
    assert one is not None and 4.0 < one < 8.0


def test_an_unknown_model_is_refused(batch_sizes, tmp_path, capsys):
    with pytest.raises(SystemExit):
        batch_sizes.main([str(grid(tmp_path)), "--scenario", str(SCENARIO), "--model", "ocr"])
    assert "has no such service" in capsys.readouterr().err


@pytest.fixture
def burst(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    monkeypatch.syspath_prepend(str(CALIBRATE))
    return importlib.import_module("burst")


def test_the_replays_zero_is_the_latest_first_arrival(burst):
    t = trace(random.Random(3), 300.0, 1.0, lead_s=0.4)
    fronts = {}
    for ev in t["traceEvents"]:
        if ev.get("ph") == "b" and ev.get("name") in MODELS:
            fronts.setdefault(ev["name"], ev["ts"] / 1e3)
    assert burst.replay_zero_ms(t) == max(fronts.values())
    # the lab's batches on the same clock as replay.arrivals
    lab = burst.lab_batches(t, "line_rnn_zh", 0.0, 3000.0)
    assert lab and lab[0].start >= 0.0 and all(b.cpu > 0 for b in lab)


def test_a_summary_counts_the_calls_time_off_a_core(burst):
    batches = [burst.Batch(0.0, 0, 8, 40.0, 36.0, 30.0), burst.Batch(50.0, 1, 2, 9.0, 9.0, 8.0)]
    text = burst.summary(batches)
    assert "2 batches, 10 requests (mean size 5.00)" in text
    assert "calls 4.50 ms a request, CPU or cost 3.80" in text
    assert "off a core 0.18 ms per ms" in text  # 45 / 38 - 1
    assert "batches of 6+: 1, the last at 0 ms" in text
    assert burst.summary([]) == "no batches"


def test_the_command_sets_the_lab_beside_the_simulator(burst, tmp_path):
    g = grid(tmp_path / "g")
    out = tmp_path / "burst.md"
    args = [str(g), "fifo/L0-r1", "--scenario", str(SCENARIO), "--from", "0.5", "--to", "1.5"]
    assert burst.main([*args, "--markdown", str(out)]) == 0
    text = out.read_text()
    assert "**lab**: " in text and "**simulated, seed 2**: " in text
    # every batch listed lies in the stretch
    starts = [
        float(line.split("|")[1])
        for line in text.splitlines()
        if line.startswith("| ") and line[2].isdigit()
    ]
    assert starts and all(500.0 <= s <= 1500.0 for s in starts)


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["fifo"], "give VARIANT/L<level>-r<repeat>"),
        (["fifo/L0-r9"], "is missing"),
        (["fifo/L0-r1", "--from", "2", "--to", "1"], "need 0 <= from < to"),
        (["fifo/L0-r1", "--model", "ocr"], "has no such service"),
        (["fifo/L0-r2"], "the run's result"),
    ],
)
def test_burst_names_wrong_input(burst, tmp_path, capsys, extra, says):
    g = grid(tmp_path)
    (g / "runs" / "fifo" / "L0-r2.json").unlink()  # a trace without its result
    with pytest.raises(SystemExit) as err:
        burst.main([str(g), extra[0], "--scenario", str(SCENARIO), *extra[1:]])
    assert err.value.code == 2
    assert says in capsys.readouterr().err
