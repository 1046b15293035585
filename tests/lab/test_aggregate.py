"""Aggregation: t-quantiles, mean and CI, capacity at SLO, ratios, and the stored fixture folder.

Expected values are computed here by closed forms (Student's t quantile for 1, 2 and 4 degrees of
freedom has one) and by hand from the fixture's run files (tests/lab/fixtures/results).
"""

import json
import math
import shutil
import statistics
from pathlib import Path

import pytest

from lanes.errors import LanesError
from lanes.lab import aggregate as agg

FIXTURE = Path(__file__).parent / "fixtures" / "results"
P = 0.975


def t_closed_form(df: int) -> float:
    """Student's t quantile at P for df 1, 2, 4 (closed forms; no scipy)."""
    if df == 1:
        return math.tan(math.pi * (P - 0.5))
    if df == 2:
        return (2 * P - 1) / math.sqrt(2 * P * (1 - P))
    if df == 4:
        alpha = 4 * P * (1 - P)
        q = math.cos(math.acos(math.sqrt(alpha)) / 3) / math.sqrt(alpha)
        return 2 * math.sqrt(q - 1)
    raise AssertionError(df)


@pytest.mark.parametrize("df", [1, 2, 4])
def test_t_quantile_matches_closed_forms(df: int) -> None:
    assert agg.t_quantile_975(df) == pytest.approx(t_closed_form(df), abs=1e-5)


@pytest.mark.parametrize(("df", "expected"), [(30, 2.042272), (31, 2.039513), (60, 2.000298),
                                              (120, 1.979930), (10_000, 1.960201)])  # fmt: skip
def test_t_quantile_large_df(df: int, expected: float) -> None:
    assert agg.t_quantile_975(df) == pytest.approx(expected, abs=2e-5)


def test_t_quantile_rejects_zero_df() -> None:
    with pytest.raises(ValueError):
        agg.t_quantile_975(0)


def by_hand(values: list[float]) -> tuple[float, float, float]:
    n = len(values)
    mean = sum(values) / n
    s = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_closed_form(n - 1) * s / math.sqrt(n)
    return mean, mean - half, mean + half


@pytest.mark.parametrize(
    "values",
    [[30.0, 34.0], [1.0, 2.0, 3.0, 4.0, 10.0], [5.0, 5.0, 5.0, 5.0, 5.0], [0.2, 0.4, 0.9]],
)
def test_mean_ci_is_students_t(values: list[float]) -> None:
    result = agg.mean_ci(values)
    assert result is not None
    mean, (lo, hi) = result
    assert (mean, lo, hi) == pytest.approx(by_hand(values), abs=1e-4)


def test_mean_ci_one_value_and_none() -> None:
    assert agg.mean_ci([7.5]) == (7.5, (7.5, 7.5))
    assert agg.mean_ci([]) is None


def test_mean_ci_clips_to_bounds() -> None:
    result = agg.mean_ci([0.5, 1.0], lo=0, hi=1)
    assert result is not None
    assert result[0] == pytest.approx(0.75)
    assert result[1] == (0, 1)  # unclipped: 0.75 ± 3.18


# ---- the stored fixture folder ----------------------------------------------------------


@pytest.fixture(scope="module")
def summary() -> dict:
    return agg.aggregate(FIXTURE)


def test_header(summary: dict) -> None:
    assert summary["experiment"] == "fixture-ocr"  # the experiment file's name key
    assert summary["baseline"] == "independent"
    assert summary["slo_ms"] == 100.0
    assert list(summary["variants"]) == ["independent", "sjf"]  # plan order
    assert set(summary["machine"]) == {"cpus", "cpu_model", "kernel", "python", "lanes"}
    assert summary["started"] == "2026-01-01T00:01:40+00:00"  # earliest started_unix


def test_level_means_and_cis(summary: dict) -> None:
    level = summary["variants"]["independent"]["levels"][0]
    assert level["repeats"] == 2
    assert level["offered_rps"] == 20.0
    assert level["concurrency"] is None
    assert level["achieved_rps"] == pytest.approx(20.0)  # 19.8, 20.2
    assert level["latency_ms"] == pytest.approx({"p50": 11.0, "p99": 32.0, "mean": 13.2})
    _, lo, hi = by_hand([30.0, 34.0])
    assert level["latency_ms_ci"]["p99"] == pytest.approx([lo, hi])
    assert level["latency_ms_ci"]["p50"][0] == 0  # 11 - 12.7: clipped at 0
    assert level["slo_attainment"] == pytest.approx(0.995)
    assert level["slo_attainment_ci"][1] == 1  # clipped at 1
    assert level["goodput_rps"] == pytest.approx(19.9)
    assert level["cpu_idle"] == pytest.approx(0.4)
    assert level["device"]["gpu0"] == pytest.approx(
        {
            "busy_s": 6.0,
            "idle_while_waiting_s": 0.5,
            "overlap_s": 2.0,
            "jobs": 239.5,
            "busy_fraction": 0.3,
        }
    )
    model = level["models"]["char_cnn"]
    assert (model["p50_ms"], model["p99_ms"], model["slowdown"]) == pytest.approx((5.5, 16, 1.375))
    assert model["mean_ms"] == pytest.approx(6.6)
    assert level["models"]["line_rnn_zh"]["slowdown"] is None  # unknown in every repeat


def test_level_where_everything_failed_has_no_latency(summary: dict) -> None:
    level = summary["variants"]["independent"]["levels"][2]
    assert level["repeats"] == 1
    assert level["latency_ms"] == {"p50": None, "p99": None, "mean": None}
    assert level["latency_ms_ci"] == {"p50": None, "p99": None, "mean": None}
    assert level["achieved_rps_ci"] == [0.0, 0.0]
    assert level["errors"] == 1600
    assert level["cpu_idle"] is None  # no server scrape
    assert (level["device"], level["models"], level["timelines"]) == ({}, {}, [])


def test_rejected_and_dropped(summary: dict) -> None:
    level = summary["variants"]["sjf"]["levels"][2]
    assert level["rejected"] == pytest.approx(70)  # server: 80, 60
    assert level["dropped"] == pytest.approx(30)  # server: 20, 40


def test_capacity_and_ratios(summary: dict) -> None:
    assert summary["variants"]["independent"]["capacity_at_slo"] == 20.0  # 0.995 | 0.94 | 0
    assert summary["variants"]["sjf"]["capacity_at_slo"] == 40.0  # 1.0 | 0.9925 | 0.575
    ratios = summary["ratios"]["variants"]
    assert ratios["sjf"]["capacity"] == pytest.approx(2.0)
    assert ratios["sjf"]["p99"] == pytest.approx([21 / 32, 42 / 130, None], nan_ok=False)
    assert ratios["independent"]["p99"] == [1.0, 1.0, None]
    flipped = agg.ratios(summary, "sjf")["variants"]
    assert flipped["independent"]["capacity"] == pytest.approx(0.5)


def test_timelines_listed(summary: dict) -> None:
    assert summary["variants"]["sjf"]["levels"][1]["timelines"] == ["runs/sjf/L1-r1.trace.json"]


def test_baseline_choice() -> None:
    assert agg.aggregate(FIXTURE, baseline="sjf")["baseline"] == "sjf"
    with pytest.raises(LanesError) as info:
        agg.aggregate(FIXTURE, baseline="edf")
    assert info.value.code == "results_invalid"
    assert info.value.message == "baseline 'edf': not a variant (have: independent, sjf)"


def test_write_summary_is_atomic_json(tmp_path: Path) -> None:
    folder = tmp_path / "results"
    shutil.copytree(FIXTURE, folder)
    path = agg.write_summary(folder)
    assert path == folder / "summary.json"
    written = json.loads(path.read_text())
    assert written["variants"]["sjf"]["capacity_at_slo"] == 40.0
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # no temporary left


# ---- small folders built here -------------------------------------------------------------


def write_run(
    folder: Path, variant: str, level: int, repeat: int, attainment: float, **extra: object
) -> Path:
    offered = extra.pop("offered", {"rate_rps": 10.0 * (level + 1), "concurrency": None})
    run = {
        "id": f"{variant}/L{level}/r{repeat}", "variant": variant, "level": level,
        "repeat": repeat, "offered": offered, "started_unix": 1.0e9, "measure_s": 10.0,
        "stable": True,
        "load": {"requests": 100, "achieved_rps": 10.0, "errors": 0, "slo_ms": 50.0,
                 "latency_ms": {"p50": 5.0, "p90": 7.0, "p99": 9.0, "p999": 9.5, "mean": 5.5,
                                "max": 10.0},
                 "status_codes": {"200": 90, "429": 7, "504": 3},
                 "slo_attainment": attainment, "goodput_rps": 9.0, "models": {}},
        "server": None, "timeline": None,
    }  # fmt: skip
    name = str(extra.pop("name", f"L{level}-r{repeat}"))
    run.update(extra)
    path = folder / "runs" / variant / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(run))
    return path


GPU_HOST = {"cpus": 16, "cpu_model": "Xeon", "kernel": "Linux 6", "python": "3.12.3", "lanes": "0"}
OTHER_HOST = dict(GPU_HOST, cpus=2, cpu_model="EPYC")


def test_the_summary_names_the_machine_that_ran_the_runs(tmp_path: Path) -> None:
    """A folder measured elsewhere (a GPU host) and aggregated here names the GPU host."""
    for level in range(2):
        write_run(tmp_path, "fifo", level, 1, 1.0, machine=GPU_HOST)
    summary = agg.aggregate(tmp_path)
    assert summary["machine"] == GPU_HOST != agg.machine()
    assert "machines" not in summary


def test_runs_from_several_machines_are_all_listed_the_most_runs_first(tmp_path: Path) -> None:
    write_run(tmp_path, "fifo", 0, 1, 1.0, machine=OTHER_HOST)
    for level in range(1, 3):
        write_run(tmp_path, "fifo", level, 1, 1.0, machine=GPU_HOST)
    summary = agg.aggregate(tmp_path)
    assert summary["machine"] == GPU_HOST
    assert summary["machines"] == [GPU_HOST, OTHER_HOST]


def test_runs_that_record_no_machine_fall_back_to_this_one(tmp_path: Path) -> None:
    write_run(tmp_path, "fifo", 0, 1, 1.0)
    assert agg.aggregate(tmp_path)["machine"] == agg.machine()


@pytest.mark.parametrize(
    ("attainments", "capacity"),
    [
        ([[1.0], [0.99], [0.985]], 20.0),  # exactly 99 % meets the SLO
        ([[0.995, 0.985], [0.97, 0.99]], 10.0),  # the mean over repeats: 0.99, then 0.98
        ([[0.98], [0.97]], None),  # no level meets it
        ([[1.0], [0.9], [1.0]], 30.0),  # the highest level meeting it, as the rule says
    ],
)
def test_capacity_rule(tmp_path: Path, attainments: list[list[float]], capacity: float | None):
    """Capacity: the highest offered level whose mean attainment is >= 99 %."""
    for level, repeats in enumerate(attainments):
        for repeat, share in enumerate(repeats, start=1):
            write_run(tmp_path, "fifo", level, repeat, share)
    variant = agg.aggregate(tmp_path)["variants"]["fifo"]
    assert variant["capacity_at_slo"] == capacity
    assert variant["capacity_unit"] == "rps"


def test_closed_loop_capacity_is_a_concurrency(tmp_path: Path) -> None:
    for level, conc in enumerate([1, 4, 16]):
        offered = {"rate_rps": None, "concurrency": conc}
        write_run(tmp_path, "sjf", level, 1, [1.0, 0.995, 0.5][level], offered=offered)
    variant = agg.aggregate(tmp_path)["variants"]["sjf"]
    assert (variant["capacity_at_slo"], variant["capacity_unit"]) == (4.0, "concurrency")
    assert variant["levels"][2]["concurrency"] == 16


def test_rejected_and_dropped_from_status_codes_without_server(tmp_path: Path) -> None:
    write_run(tmp_path, "fifo", 0, 1, 1.0)
    level = agg.aggregate(tmp_path)["variants"]["fifo"]["levels"][0]
    assert (level["rejected"], level["dropped"]) == (7.0, 3.0)
    assert level["device"] == {}
    assert agg.aggregate(tmp_path)["experiment"] == tmp_path.name  # no experiment.toml


def test_variants_without_plan_sorted_and_default_baseline(tmp_path: Path) -> None:
    for name in ("sjf", "fifo"):
        write_run(tmp_path, name, 0, 1, 1.0)
    summary = agg.aggregate(tmp_path)
    assert list(summary["variants"]) == ["fifo", "sjf"]
    assert summary["baseline"] == "fifo"  # no independent: the first variant


def test_mean_over_five_repeats(tmp_path: Path) -> None:
    p99s = [9.0, 11.0, 10.0, 14.0, 12.0]
    for repeat, p99 in enumerate(p99s, start=1):
        latency = {"p50": 5.0, "p90": 7.0, "p99": p99, "p999": 20.0, "mean": 5.5, "max": 30.0}
        write_run(tmp_path, "fifo", 0, repeat, 1.0)
        path = tmp_path / "runs" / "fifo" / f"L0-r{repeat}.json"
        run = json.loads(path.read_text())
        run["load"]["latency_ms"] = latency
        path.write_text(json.dumps(run))
    level = agg.aggregate(tmp_path)["variants"]["fifo"]["levels"][0]
    mean, lo, hi = by_hand(p99s)
    assert level["latency_ms"]["p99"] == pytest.approx(statistics.fmean(p99s)) == mean
    assert level["latency_ms_ci"]["p99"] == pytest.approx([lo, hi], abs=1e-4)
    assert level["repeats"] == 5


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (None, "not a directory"),
        ("empty", "no run results (runs/<variant>/L<level>-r<repeat>.json)"),
        ("bad_json", "not readable JSON"),
        ("no_level", "key 'level' missing or not int"),
        ("no_goodput", "load lacks goodput_rps"),
    ],
)
def test_bad_results_folder_is_one_clear_error(tmp_path: Path, setup: str | None, message: str):
    folder = tmp_path / "results"
    if setup is not None:
        folder.mkdir()
    if setup == "bad_json":
        (folder / "runs" / "fifo").mkdir(parents=True)
        (folder / "runs" / "fifo" / "L0-r1.json").write_text("{not json")
    elif setup in ("no_level", "no_goodput"):
        write_run(folder, "fifo", 0, 1, 1.0)
        path = folder / "runs" / "fifo" / "L0-r1.json"
        run = json.loads(path.read_text())
        if setup == "no_level":
            run["level"] = "zero"
        else:
            del run["load"]["goodput_rps"]
        path.write_text(json.dumps(run))
    with pytest.raises(LanesError) as info:
        agg.aggregate(folder)
    assert info.value.code == "results_invalid"
    assert message in info.value.message
    assert "\n" not in info.value.message


# ---- the searched capacity ----------------------------------------------------------------


def write_measured(
    folder: Path,
    variant: str,
    repeat: int,
    rate: float,
    attainment: float,
    *,
    level: int | None = None,
    probe: int | None = None,
    goodput: float = 9.0,
    models: dict[str, float] | None = None,
) -> None:
    """A grid run (``level``) or a capacity probe (``probe``) at ``rate`` req/s."""
    offered = {"rate_rps": rate, "concurrency": None}
    where = {"level": level} if probe is None else {"level": None, "probe": probe}
    name = f"L{level}-r{repeat}" if probe is None else f"S{probe}-r{repeat}"
    path = write_run(folder, variant, level or 0, repeat, attainment, offered=offered, name=name)
    run = json.loads(path.read_text())
    run.update(where)
    run["load"]["goodput_rps"] = goodput
    run["load"]["models"] = {m: {"requests": 10, "slo_attainment": a}
                             for m, a in (models or {}).items()}  # fmt: skip
    path.write_text(json.dumps(run))


# Per variant and repeat: the grid's attainment at 10, 20, 30 req/s, then the probes (rate, met).
SEARCHED = {
    "independent": {
        1: ([1.0, 0.5, 0.1], [(15.0, 1.0), (17.5, 0.9)]),  # [15, 17.5)
        2: ([1.0, 0.5, 0.1], [(15.0, 0.9), (12.5, 1.0)]),  # [12.5, 15)
    },
    "fifo": {
        1: ([1.0, 1.0, 0.1], [(25.0, 0.995), (27.5, 0.98)]),  # [25, 27.5)
        2: ([1.0, 1.0, 0.1], [(25.0, 0.98), (22.5, 0.99)]),  # [22.5, 25)
    },
}
GOODPUT_AT_30 = {("independent", 1): 10.0, ("independent", 2): 20.0, ("fifo", 1): 15.0,
                 ("fifo", 2): 40.0}  # fmt: skip


@pytest.fixture()
def searched(tmp_path: Path) -> dict:
    (tmp_path / "experiment.toml").write_text(
        'name = "s"\nbaseline = "independent"\n[workload]\ncapacity_search = { steps = 2 }\n'
    )
    for variant, repeats in SEARCHED.items():
        for repeat, (grid, probes) in repeats.items():
            for level, share in enumerate(grid):
                goodput = GOODPUT_AT_30[(variant, repeat)] if level == 2 else 9.0
                # model "a" follows the total; "b" misses from 20 req/s on
                models = {"a": share, "b": share if level == 0 else 0.5}
                write_measured(tmp_path, variant, repeat, 10.0 * (level + 1), share,
                               level=level, goodput=goodput, models=models)  # fmt: skip
            for step, (rate, share) in enumerate(probes, start=1):
                write_measured(tmp_path, variant, repeat, rate, share, probe=step,
                               models={"a": share, "b": 0.5})  # fmt: skip
    return agg.aggregate(tmp_path)


def test_capacity_search_brackets_each_repeat_and_averages(searched: dict) -> None:
    search = searched["variants"]["independent"]["capacity_search"]
    _, _, hi = by_hand([15.0, 12.5])
    assert search["capacity"] == pytest.approx(13.75)
    assert search["capacity_ci"] == pytest.approx([0.0, hi])  # 13.75 - 15.9: clipped at 0
    assert search["high"] == pytest.approx(16.25)
    assert search["resolution"] == pytest.approx(2.5)  # the mean bracket: 20 / 2**2 wide
    assert search["steps"] == 2
    assert search["repeats"] == [
        {"repeat": 1, "low": 15.0, "high": 17.5,
         "probes": [{"load": 15.0, "slo_attainment": 1.0}, {"load": 17.5, "slo_attainment": 0.9}]},
        {"repeat": 2, "low": 12.5, "high": 15.0,
         "probes": [{"load": 15.0, "slo_attainment": 0.9}, {"load": 12.5, "slo_attainment": 1.0}]},
    ]  # fmt: skip
    fifo = searched["variants"]["fifo"]
    assert fifo["capacity_search"]["capacity"] == pytest.approx(23.75)
    assert fifo["capacity_at_slo"] == 20.0  # the grid's figure is kept as it was
    assert [lv["level"] for lv in fifo["levels"]] == [0, 1, 2]  # probes are not levels


def test_per_model_capacity_uses_the_same_loads(searched: dict) -> None:
    fifo = searched["variants"]["fifo"]
    model_a = fifo["per_model_capacity"]["a"]
    assert model_a["capacity"] == pytest.approx(23.75)  # as the total
    model_b = fifo["per_model_capacity"]["b"]
    # "b" met only at 10; its next measured load above is 20: resolved to the grid's gap
    assert (model_b["capacity"], model_b["high"], model_b["resolution"]) == (10.0, 20.0, 10.0)
    assert fifo["every_model_capacity"]["capacity"] == 10.0
    assert set(fifo["per_model_capacity"]) == {"a", "b"}


def test_capacity_and_goodput_ratios_pair_the_repeats(searched: dict) -> None:
    fifo = searched["ratios"]["variants"]["fifo"]
    ratio = fifo["capacity_search"]
    _, lo, hi = by_hand([25.0 / 15.0, 22.5 / 12.5])
    assert ratio["ratio"] == pytest.approx((25.0 / 15.0 + 22.5 / 12.5) / 2)
    assert ratio["ratio_ci"] == pytest.approx([lo, hi])
    assert ratio["pairs"] == 2
    assert fifo["every_model_capacity"] == {"ratio": 1.0, "ratio_ci": [1.0, 1.0], "pairs": 2}
    goodput = fifo["goodput"]
    assert goodput[0] == {"ratio": 1.0, "ratio_ci": [1.0, 1.0], "pairs": 2}
    _, lo, hi = by_hand([1.5, 2.0])
    assert goodput[2]["ratio"] == pytest.approx(1.75)
    assert goodput[2]["ratio_ci"] == pytest.approx([max(0.0, lo), hi])
    assert fifo["capacity"] == pytest.approx(2.0)  # the grid's ratio is kept: 20 / 10
    level = searched["variants"]["fifo"]["levels"][2]
    assert level["goodput_rps_by_repeat"] == {"1": 15.0, "2": 40.0}


@pytest.mark.parametrize(
    ("values", "base", "expected"),
    [
        ({"1": 2.0, "2": 3.0}, {"1": 1.0, "2": 1.0}, (2.5, 2)),
        ({"1": 2.0, "2": 3.0}, {"1": 1.0}, (2.0, 1)),  # only repeats on both sides pair
        ({"1": 2.0, "2": 3.0}, {"1": 0.0, "2": 1.0}, (3.0, 1)),  # a base of 0 gives no ratio
        ({"1": None}, {"1": 1.0}, None),
        ({}, {}, None),
    ],
)
def test_paired_ratio(values: dict, base: dict, expected: tuple[float, int] | None) -> None:
    got = agg.paired_ratio(values, base)
    if expected is None:
        assert got is None
    else:
        assert (got["ratio"], got["pairs"]) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("grids", "capacity", "high"),
    [
        ([[1.0, 1.0], [1.0, 1.0]], 20.0, None),  # every load met: at least 20, no upper end
        ([[1.0, 0.5], [0.5, 0.5]], None, None),  # repeat 2 met nowhere: below the grid
        ([[1.0, 0.5], [1.0, 0.5]], 10.0, 20.0),
    ],
)
def test_capacity_search_without_an_end(
    tmp_path: Path, grids: list[list[float]], capacity: float | None, high: float | None
) -> None:
    for repeat, grid in enumerate(grids, start=1):
        for level, share in enumerate(grid):
            write_run(tmp_path, "fifo", level, repeat, share)
    search = agg.aggregate(tmp_path)["variants"]["fifo"]["capacity_search"]
    assert (search["capacity"], search["high"], search["steps"]) == (capacity, high, 0)
    assert search["resolution"] == (None if high is None else high - capacity)
