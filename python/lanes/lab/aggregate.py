"""Aggregation: an experiment's runs reduced to ``summary.json``.

A results folder (docs/lab.md) holds one JSON file per run,
``runs/<variant>/L<level>-r<repeat>.json``, and one per capacity probe,
``runs/<variant>/S<step>-r<repeat>.json`` (:mod:`lanes.lab.capacity`).
:func:`aggregate` groups the runs by variant and load level and reduces the repeats of each group:

- **Means and confidence intervals.** Every figure is the mean over the repeats that report it.
  The headline figures (achieved rate, p50 and p99 latency, SLO attainment, goodput) also get a
  95 % confidence interval from Student's t with n - 1 degrees of freedom:
  ``mean ± t(0.975, n - 1) · s / √n``, ``s`` the sample standard deviation; one repeat gives
  ``[x, x]`` (no spread is known, none is invented). An interval is clipped to what the figure
  can be: at 0 below, and at 1 above for SLO attainment.
- **Capacity at SLO** (``capacity_at_slo``, read off the grid): the highest offered level whose
  mean SLO attainment is at least 99 %; the level is the offered rate (rps) in open loop and the
  concurrency in closed loop (``capacity_unit``); null when no level reaches 99 %.
- **Searched capacity** (``capacity_search``): each repeat's bracket ``[low, high)``
  (:func:`lanes.lab.capacity.bracket`) over every load that repeat measured — its grid levels
  and its bisection probes — with a load meeting the SLO when its own attainment is >= 99 %.
  ``capacity`` is the mean of the repeats' ``low`` with its t interval, ``high`` the mean of
  their ``high`` and ``resolution`` = ``high - capacity`` (the mean boundary lies within it).
  ``capacity`` is null when some repeat met the SLO at no load (its capacity lies below the
  grid; no mean is claimed); ``high`` and ``resolution`` are null when some repeat met it at
  every load (its capacity is at least the highest load measured).
- **Per-model capacity** (``per_model_capacity``, ``every_model_capacity``): the same rule on the
  same measured loads, a load meeting it when that model's attainment (every model's, and the
  overall) is >= 99 %. The probes are placed for the overall rule, so a model whose boundary
  lies elsewhere is resolved to its grid gap: its ``resolution`` says so.
- **Rejected and dropped**: the server's counters (queue full; deadline expired) when the run
  scraped the server, else the client's count of 429 and 504 replies.
- **No data**: a run with no replies has no latency; a figure no repeat reports is null.
- **Late sends** (``late_sends_fraction`` and ``send_delay_p99_ms`` per level, open loop): the
  means over repeats of the share of sends that left more than the engine's ``late_after``
  behind schedule and of the send delay's p99 — every connection of a generator busy with a slow
  reply, or its CPU saturated (docs/bench.md). A level whose sends were late by a tenth of the
  SLO has latencies that include the wait for a connection (lanes.lab.report says so).
- **Behind**: a run (or probe) whose load generators fell behind (``cluster.behind``: late
  sends or clock offset past the ``[cluster]`` bounds, :mod:`lanes.lab.cluster`) measured the
  generators as much as the server: it is left out of every figure and listed under
  ``behind`` with its reasons (a level whose every repeat fell behind has no entry).
- **Disturbed** (:mod:`lanes.lab.host_noise`): a run (or probe) during whose window the rest of
  the host (other processes, the hypervisor's steal) took at least ``DISTURBED_CORES`` cores is
  listed under ``disturbed`` with that share and its p99, and each level carries the mean
  share (``other_cores``). It stays in the figures: how much of its tail the neighbour made
  cannot be told from the run, but the reader is told where to look.
- **Slow host** (:mod:`lanes.lab.speed_probe`): a run (or probe) whose host ran the speed
  probe's fixed work ``SLOW_HOST`` times as slow as its peers' median run (the runs at the same
  offered load, at least ``MIN_PEERS`` of them) or slower is listed under ``slow_host`` with that
  ratio and its p99. The summary's ``probe_work_ms`` is the folder's median run's probe, each
  level's the mean of its runs'. The runs stay in the figures, as a disturbed run does.
- **Stopped** (:mod:`lanes.lab.call_clocks`): a run (or probe) whose slowest calls spent at
  least ``STOPPED_TAIL`` of their wall time neither running nor waiting for a core — on the
  lab's single-threaded CPU devices, the hypervisor's stops — is listed under ``stopped`` with
  that share and its p99: its tail is partly the host's. It stays in the figures.
- **Ratios to the baseline** (:func:`ratios`): each variant's grid capacity and p99 at each
  level divided by the baseline variant's at the same level index; null where either side is
  missing or the baseline's figure is 0. The searched capacities and the goodput at each level
  are compared repeat by repeat (:func:`paired_ratio`): the mean of the per-repeat ratios with
  its t interval; null when either capacity is null or no repeat pairs.

:func:`write_summary` writes the result atomically to ``RESULTS_DIR/summary.json``.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import json
import math
import os
import platform
import re
import statistics
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from lanes.errors import RESULTS_INVALID, LanesError
from lanes.files import write_atomic
from lanes.lab import call_clocks, capacity, speed_probe
from lanes.lab.host_noise import disturbed
from lanes.lab.speed_probe import SLOW_HOST

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

SLO_TARGET = capacity.SLO_TARGET
"""A level meets the SLO when at least this share of its requests does."""

_T975 = (
    12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157,
    2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905, 2.109816, 2.100922,
    2.093024, 2.085963, 2.079614, 2.073873, 2.068658, 2.063899, 2.059539, 2.055529, 2.051831,
    2.048407, 2.045230, 2.042272,
)  # fmt: skip
"""t(0.975, df) for df = 1..30, the two-sided 95 % quantiles of Student's t."""
_Z975 = 1.959963985
"""The standard normal's 0.975 quantile."""


def t_quantile_975(df: int) -> float:
    """Student's t 0.975 quantile with ``df`` degrees of freedom.

    Exact (6 digits) from a table for df <= 30; beyond, the Cornish-Fisher expansion in 1/df
    (Abramowitz & Stegun 26.7.5), good to 1e-5 there.
    """
    if df < 1:
        raise ValueError(f"degrees of freedom {df}: must be >= 1")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return float(z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4)


def mean_ci(
    values: Sequence[float], lo: float = -math.inf, hi: float = math.inf
) -> tuple[float, tuple[float, float]] | None:
    """The mean of ``values`` and its 95 % t confidence interval clipped to ``[lo, hi]``.

    None for no values; ``(x, (x, x))`` for one.
    """
    if not values:
        return None
    mean = statistics.fmean(values)
    if len(values) == 1:
        return mean, (mean, mean)
    half = t_quantile_975(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return mean, (max(lo, mean - half), min(hi, mean + half))


def mean_or_none(values: Iterable[float | None]) -> float | None:
    """The mean of the values that are not None; None when there are none."""
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


@dataclass(frozen=True)
class Run:
    """One run's result file: where it is and what it says."""

    path: Path
    data: Mapping[str, Any]

    @property
    def variant(self) -> str:
        return str(self.data["variant"])

    @property
    def level(self) -> int:
        return int(self.data["level"])

    @property
    def repeat(self) -> int:
        return int(self.data["repeat"])

    @property
    def offered(self) -> float | None:
        """The offered rate in open loop, the concurrency in closed loop."""
        offered = self.data.get("offered") or {}
        rate = _number(offered.get("rate_rps"))
        return rate if rate is not None else _number(offered.get("concurrency"))

    @property
    def load(self) -> Mapping[str, Any]:
        return dict(self.data["load"])

    @property
    def server(self) -> Mapping[str, Any] | None:
        server = self.data.get("server")
        return server if isinstance(server, Mapping) else None

    def latency(self, key: str) -> float | None:
        """The run's latency percentile ``key`` in ms; None when it has no replies."""
        if not self.load.get("requests"):
            return None
        return _number(self.load.get("latency_ms", {}).get(key))


_RUN_NAME = re.compile(r"L[0-9]+-r[0-9]+\.json")
"""A run result's file name (traces beside it end in ``.trace.json``)."""
_PROBE_NAME = re.compile(r"S[0-9]+-r[0-9]+\.json")
"""A capacity probe's file name."""
_RUN_KEYS = {"variant": str, "level": int, "repeat": int, "load": dict}
_PROBE_KEYS = {"variant": str, "probe": int, "repeat": int, "load": dict, "offered": dict}
_LOAD_KEYS = ("requests", "achieved_rps", "latency_ms", "slo_attainment", "goodput_rps")


def load_runs(results_dir: Path) -> list[Run]:
    """Every run result under ``results_dir/runs``, checked; ``results_invalid`` if none."""
    if not results_dir.is_dir():
        raise LanesError(RESULTS_INVALID, f"results folder {results_dir}: not a directory")
    runs_dir = results_dir / "runs"
    paths = sorted(p for p in runs_dir.glob("*/L*-r*.json") if _RUN_NAME.fullmatch(p.name))
    if not paths:
        raise LanesError(
            RESULTS_INVALID,
            f"results folder {results_dir}: no run results "
            "(runs/<variant>/L<level>-r<repeat>.json)",
        )
    return [_read_run(path) for path in paths]


def load_probes(results_dir: Path) -> list[Run]:
    """Every capacity probe under ``results_dir/runs`` (``S<step>-r<repeat>.json``), checked."""
    paths = sorted(
        p for p in (results_dir / "runs").glob("*/S*-r*.json") if _PROBE_NAME.fullmatch(p.name)
    )
    return [_read_run(path, _PROBE_KEYS) for path in paths]


def _read_run(path: Path, keys: Mapping[str, type] = _RUN_KEYS) -> Run:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise LanesError(RESULTS_INVALID, f"run result {path}: not readable JSON ({err})") from err
    if not isinstance(data, dict):
        raise LanesError(RESULTS_INVALID, f"run result {path}: not a JSON object")
    for key, kind in keys.items():
        if not isinstance(data.get(key), kind) or isinstance(data.get(key), bool):
            raise LanesError(
                RESULTS_INVALID, f"run result {path}: key {key!r} missing or not {kind.__name__}"
            )
    missing = [k for k in _LOAD_KEYS if k not in data["load"]]
    if missing:
        raise LanesError(RESULTS_INVALID, f"run result {path}: load lacks {', '.join(missing)}")
    return Run(path, data)


def aggregate(results_dir: Path | str, baseline: str | None = None) -> dict[str, Any]:
    """The summary of the results folder (the ``summary.json`` format of docs/lab.md).

    ``baseline`` names the variant the ratios are taken to; by default the experiment's
    ``baseline`` key, else ``independent`` when present, else the first variant of the plan.
    """
    root = Path(results_dir)
    every, every_probe = load_runs(root), load_probes(root)
    runs = [r for r in every if not _behind(r)]
    probes = [p for p in every_probe if not _behind(p)]
    experiment = _experiment(root)
    order = _variant_order(root, every)
    steps = _search_steps(experiment)
    variants = {
        name: _variant(
            [r for r in runs if r.variant == name], [p for p in probes if p.variant == name], steps
        )
        for name in order
    }
    chosen = _baseline(baseline, experiment.get("baseline"), order)
    slo = [_number(r.load.get("slo_ms")) for r in runs]
    started = [t for t in (_number(r.data.get("started_unix")) for r in runs) if t is not None]
    ran_on = run_machines(every + every_probe)
    summary: dict[str, Any] = {
        "experiment": str(experiment.get("name") or root.resolve().name),
        "slo_ms": mean_or_none(slo),
        "baseline": chosen,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "started": _iso(min(started)) if started else None,
        "machine": ran_on[0] if ran_on else machine(),
        "variants": variants,
    }
    if len(ran_on) > 1:
        summary["machines"] = ran_on
    behind = [r for r in every + every_probe if _behind(r)]
    if behind:
        summary["behind"] = [
            {"id": str(r.data.get("id") or r.path.name), "reasons": r.data["cluster"]["reasons"]}
            for r in behind
        ]
    everything = every + every_probe
    noisy = [(r, cores) for r in everything if (cores := disturbed(r.server)) is not None]
    if noisy:
        summary["disturbed"] = _named(noisy, "other_cores")
    known = [w for w in (speed_probe.work_ms(r.data) for r in everything) if w is not None]
    if known:
        summary["probe_work_ms"] = round(statistics.median(known), 4)
    speeds = speed_probe.host_speeds([r.data for r in everything])
    slow = [(r, v) for r, v in zip(everything, speeds, strict=True) if v and v >= SLOW_HOST]
    if slow:
        summary["slow_host"] = _named(slow, "host_speed")
    stopped = [
        (r, v)
        for r in everything
        if (v := call_clocks.stopped_tail(r.data.get("calls"))) is not None
    ]
    if stopped:
        summary["stopped"] = _named(stopped, "stopped_tail")
    summary["ratios"] = ratios(summary, chosen)
    from lanes.lab.diagnosis import collect

    found = collect(root, runs, variants)
    if found:
        summary["diagnosis"] = found
    return summary


def _named(runs: list[tuple[Run, float]], field: str) -> list[dict[str, Any]]:
    """The summary's list of runs named for a reason: each run's id, its figure under
    ``field`` (to 3 decimals) and its p99."""
    return [
        {"id": str(r.data.get("id") or r.path.name), field: round(v, 3), "p99_ms": r.latency("p99")}
        for r, v in runs
    ]


def _behind(run: Run) -> bool:
    """A run whose generators fell behind (``cluster.behind``, :mod:`lanes.lab.cluster`)."""
    cluster = run.data.get("cluster")
    return isinstance(cluster, Mapping) and bool(cluster.get("behind"))


def write_summary(
    results_dir: Path | str,
    baseline: str | None = None,
    *,
    summary: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``summary.json`` into ``results_dir`` atomically and return its path.

    The summary is ``aggregate(results_dir, baseline)`` unless one is given.
    """
    root = Path(results_dir)
    if summary is None:
        summary = aggregate(root, baseline)
    path = root / "summary.json"
    data = (json.dumps(summary, indent=2, allow_nan=False) + "\n").encode()

    def write(f: IO[bytes]) -> None:
        f.write(data)

    write_atomic(path, write)
    return path


def ratios(summary: Mapping[str, Any], baseline: str) -> dict[str, Any]:
    """Each variant's figures over ``baseline``'s (see the module doc)."""
    variants: Mapping[str, Any] = summary["variants"]
    if baseline not in variants:
        names = ", ".join(variants)
        raise LanesError(RESULTS_INVALID, f"baseline {baseline!r}: not a variant (have: {names})")
    base = variants[baseline]
    base_p99 = {lv["level"]: lv["latency_ms"]["p99"] for lv in base["levels"]}
    base_goodput = {lv["level"]: lv.get("goodput_rps_by_repeat") or {} for lv in base["levels"]}
    out: dict[str, Any] = {}
    for name, variant in variants.items():
        out[name] = {
            "capacity": _ratio(variant["capacity_at_slo"], base["capacity_at_slo"]),
            "p99": [
                _ratio(lv["latency_ms"]["p99"], base_p99.get(lv["level"]))
                for lv in variant["levels"]
            ],
            **{
                key: paired_ratio(_repeat_lows(variant.get(key)), _repeat_lows(base.get(key)))
                for key in ("capacity_search", "every_model_capacity")
            },
            "goodput": [
                paired_ratio(
                    lv.get("goodput_rps_by_repeat") or {}, base_goodput.get(lv["level"], {})
                )
                for lv in variant["levels"]
            ],
        }
    return {"baseline": baseline, "variants": out}


def paired_ratio(
    values: Mapping[str, float | None], base: Mapping[str, float | None]
) -> dict[str, Any] | None:
    """The ratio of two figures measured in the same repeats, with its 95 % interval.

    Each repeat present on both sides gives one ratio ``value / base`` (a base of 0 or None
    gives none): the variants of a repeat ran in the same interleaved slot, so the ratio
    cancels the drift they shared. The result is the mean of those ratios with its Student's t
    interval (:func:`mean_ci`, clipped at 0) and the number of pairs; None without a pair.
    """
    ratios = [
        v / b
        for key, v in values.items()
        if v is not None and (b := base.get(key)) is not None and b != 0
    ]
    stat = mean_ci(ratios, lo=0)
    if stat is None:
        return None
    return {"ratio": stat[0], "ratio_ci": [stat[1][0], stat[1][1]], "pairs": len(ratios)}


def _repeat_lows(block: Mapping[str, Any] | None) -> dict[str, float | None]:
    """``{repeat: low}`` of a capacity block's repeats; empty when its capacity is null."""
    if not block or block.get("capacity") is None:
        return {}
    return {str(r["repeat"]): r["low"] for r in block.get("repeats", [])}


def _ratio(value: float | None, base: float | None) -> float | None:
    if value is None or base is None or base == 0:
        return None
    return value / base


def _variant(runs: list[Run], probes: list[Run], steps: int) -> dict[str, Any]:
    levels = [_level(runs, i) for i in sorted({r.level for r in runs})]
    closed = all(lv["offered_rps"] is None for lv in levels)
    key = "concurrency" if closed else "offered_rps"
    meeting = [
        lv[key] for lv in levels if lv[key] is not None and capacity.meets(lv["slo_attainment"])
    ]
    probes = sorted(probes, key=lambda p: int(p.data["probe"]))
    measured = runs + probes
    models = sorted({str(m) for r in measured for m in (r.load.get("models") or {})})
    search = {**_capacity(measured, _meets_overall), "steps": steps}
    search["repeats"] = search.pop("repeats")  # last, after the figures
    for entry in search["repeats"]:
        entry["probes"] = [
            {"load": p.offered, "slo_attainment": _number(p.load.get("slo_attainment"))}
            for p in probes
            if p.repeat == entry["repeat"]
        ]
    return {
        "capacity_at_slo": float(max(meeting)) if meeting else None,
        "capacity_unit": "concurrency" if closed else "rps",
        "capacity_search": search,
        "per_model_capacity": {m: _capacity(measured, _meets_model(m)) for m in models},
        "every_model_capacity": _capacity(measured, _meets_every_model),
        "deadline_ms": _deadline(measured),
        "levels": levels,
    }


def _deadline(runs: list[Run]) -> float | dict[str, float | None] | None:
    """The deadline the variant's requests carried (the runs' ``offered``): a number, each
    model's when they differ (``deadline_ms_models``), or None when none was sent; a variant
    whose runs disagree (resumed after the file changed) gives its last run's."""
    if not runs:
        return None
    offered = runs[-1].data.get("offered") or {}
    models = offered.get("deadline_ms_models")
    if models:
        return {str(m): _number(ms) for m, ms in models.items()}
    return _number(offered.get("deadline_ms"))


def _meets_overall(run: Run) -> bool | None:
    return capacity.meets(_number(run.load.get("slo_attainment")))


def _meets_model(model: str) -> Callable[[Run], bool | None]:
    def meets(run: Run) -> bool | None:
        block = (run.load.get("models") or {}).get(model)
        return None if block is None else capacity.meets(_number(block.get("slo_attainment")))

    return meets


def _meets_every_model(run: Run) -> bool | None:
    models = (run.load.get("models") or {}).values()
    return _meets_overall(run) and all(
        capacity.meets(_number(m.get("slo_attainment"))) for m in models
    )


def _capacity(runs: list[Run], meets: Callable[[Run], bool | None]) -> dict[str, Any]:
    """The capacity block of a rule (see the module doc) from a variant's measured runs."""
    per_repeat: dict[int, list[capacity.Point]] = {}
    for run in runs:
        met, load = meets(run), run.offered
        if met is not None and load is not None:
            per_repeat.setdefault(run.repeat, []).append((load, met))
    return capacity_block({r: capacity.bracket(points) for r, points in per_repeat.items()})


def capacity_block(brackets: Mapping[int, capacity.Bracket]) -> dict[str, Any]:
    """A capacity block (``capacity_search``'s figures; see the module doc) from each repeat's
    bracket."""
    brackets = dict(sorted(brackets.items()))
    lows = [b.low for b in brackets.values()]
    highs = [b.high for b in brackets.values()]
    low = mean_ci(_present(lows), lo=0) if None not in lows else None
    high = statistics.fmean(_present(highs)) if low is not None and None not in highs else None
    return {
        "capacity": _mean(low),
        "capacity_ci": _ci(low),
        "high": high,
        "resolution": None if low is None or high is None else high - low[0],
        "repeats": [{"repeat": r, "low": b.low, "high": b.high} for r, b in brackets.items()],
    }


def _search_steps(experiment: Mapping[str, Any]) -> int:
    """The experiment file's ``workload.capacity_search.steps``; 0 when absent."""
    workload = experiment.get("workload")
    search = workload.get("capacity_search") if isinstance(workload, dict) else None
    steps = search.get("steps") if isinstance(search, dict) else None
    return steps if isinstance(steps, int) and not isinstance(steps, bool) else 0


def _level(variant_runs: list[Run], level: int) -> dict[str, Any]:
    runs = sorted((r for r in variant_runs if r.level == level), key=lambda r: r.path.name)
    offered = runs[0].data.get("offered") or {}
    achieved = mean_ci([float(r.load["achieved_rps"]) for r in runs], lo=0)
    p50 = mean_ci(_present(r.latency("p50") for r in runs), lo=0)
    p99 = mean_ci(_present(r.latency("p99") for r in runs), lo=0)
    mean = mean_ci(_present(r.latency("mean") for r in runs), lo=0)
    attainment = mean_ci([float(r.load["slo_attainment"]) for r in runs], lo=0, hi=1)
    goodput = mean_ci([float(r.load["goodput_rps"]) for r in runs], lo=0)
    servers = [s for s in (r.server for r in runs) if s is not None]
    return {
        "level": level,
        "offered_rps": _number(offered.get("rate_rps")),
        "concurrency": offered.get("concurrency"),
        "achieved_rps": _mean(achieved),
        "achieved_rps_ci": _ci(achieved),
        "latency_ms": {"p50": _mean(p50), "p99": _mean(p99), "mean": _mean(mean)},
        "latency_ms_ci": {"p50": _ci(p50), "p99": _ci(p99), "mean": _ci(mean)},
        "slo_attainment": _mean(attainment),
        "slo_attainment_ci": _ci(attainment),
        "goodput_rps": _mean(goodput),
        "goodput_rps_ci": _ci(goodput),
        "goodput_rps_by_repeat": {str(r.repeat): float(r.load["goodput_rps"]) for r in runs},
        "repeats": len(runs),
        "requests": statistics.fmean(float(r.load["requests"]) for r in runs),
        "errors": mean_or_none(_number(r.load.get("errors")) for r in runs),
        "late_sends_fraction": mean_or_none(
            _number(r.load.get("late_sends_fraction")) for r in runs
        ),
        "send_delay_p99_ms": mean_or_none(
            _number((r.load.get("send_delay_ms") or {}).get("p99")) for r in runs
        ),
        "rejected": statistics.fmean(_rejected(r) for r in runs),
        "dropped": statistics.fmean(_dropped(r) for r in runs),
        "cpu_idle": mean_or_none(_number(s.get("host_cpu_idle")) for s in servers),
        "process_cpu_s": mean_or_none(_number(s.get("process_cpu_s")) for s in servers),
        "other_cores": mean_or_none(_number(s.get("other_cores")) for s in servers),
        "probe_work_ms": mean_or_none(speed_probe.work_ms(r.data) for r in runs),
        "device": _devices(runs),
        "models": _models(runs),
        "timelines": [str(r.data["timeline"]) for r in runs if r.data.get("timeline")],
    }


def _rejected(run: Run) -> float:
    server = run.server
    if server is not None and _number(server.get("rejected")) is not None:
        return float(server["rejected"])
    return float(run.load.get("status_codes", {}).get("429", 0))


def _dropped(run: Run) -> float:
    server = run.server
    if server is not None and _number(server.get("expired")) is not None:
        return float(server["expired"])
    return float(run.load.get("status_codes", {}).get("504", 0))


_DEVICE_KEYS = ("busy_s", "idle_while_waiting_s", "overlap_s", "jobs")


def _devices(runs: list[Run]) -> dict[str, dict[str, float | None]]:
    """Per device: the mean of each counter, and ``busy_fraction``: busy_s over the counters'
    window (the server block's ``window_s``, between its two scrapes; else ``measure_s``)."""
    per: dict[str, list[tuple[Mapping[str, Any], float | None]]] = {}
    for run in runs:
        server = run.server
        span = _number((server or {}).get("window_s")) or _number(run.data.get("measure_s"))
        for name, device in ((server or {}).get("device") or {}).items():
            per.setdefault(str(name), []).append((device, span))
    out: dict[str, dict[str, float | None]] = {}
    for name, items in per.items():
        means = {k: mean_or_none(_number(d.get(k)) for d, _ in items) for k in _DEVICE_KEYS}
        fractions = (
            busy / span if (busy := _number(d.get("busy_s"))) is not None and span else None
            for d, span in items
        )
        out[name] = {**means, "busy_fraction": mean_or_none(fractions)}
    return out


def _models(runs: list[Run]) -> dict[str, dict[str, float | None]]:
    per: dict[str, list[Mapping[str, Any]]] = {}
    for run in runs:
        for name, model in (run.load.get("models") or {}).items():
            per.setdefault(str(name), []).append(model)
    out: dict[str, dict[str, float | None]] = {}
    for name, items in per.items():
        answered = [m for m in items if m.get("requests")]
        out[name] = {
            "p50_ms": mean_or_none(_number(m.get("latency_ms", {}).get("p50")) for m in answered),
            "p99_ms": mean_or_none(_number(m.get("latency_ms", {}).get("p99")) for m in answered),
            "mean_ms": mean_or_none(_number(m.get("latency_ms", {}).get("mean")) for m in answered),
            "slowdown": mean_or_none(_number(m.get("slowdown")) for m in answered),
            "slo_attainment": mean_or_none(_number(m.get("slo_attainment")) for m in items),
            "achieved_rps": mean_or_none(_number(m.get("achieved_rps")) for m in items),
        }
    return out


def _experiment(root: Path) -> dict[str, Any]:
    """The experiment file's top-level keys, or nothing when it is absent or unreadable."""
    try:
        return dict(tomllib.loads((root / "experiment.toml").read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def _variant_order(root: Path, runs: list[Run]) -> list[str]:
    """Variants in the plan's order; any the plan does not name follow, by name."""
    order: list[str] = []
    try:
        plan = json.loads((root / "plan.json").read_text(encoding="utf-8"))
        for entry in plan.get("runs", []):
            if isinstance(entry, dict) and entry.get("variant") not in (None, *order):
                order.append(str(entry["variant"]))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        pass
    present = {r.variant for r in runs}
    return [v for v in order if v in present] + sorted(present - set(order))


def _baseline(asked: str | None, configured: object, variants: list[str]) -> str:
    if asked is not None:
        if asked not in variants:
            have = ", ".join(variants)
            raise LanesError(RESULTS_INVALID, f"baseline {asked!r}: not a variant (have: {have})")
        return asked
    if isinstance(configured, str) and configured in variants:
        return configured
    return "independent" if "independent" in variants else variants[0]


def run_machines(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """The machines the runs record (their ``machine`` blocks), the one with the most runs first
    (ties: the first seen); empty when no run records one (folders written before runs did).

    A folder copied off the machine that measured it and aggregated elsewhere (``lanes report``
    on a GPU host's results) so still names the measuring machine, not the aggregating one.
    """
    blocks = (r.data.get("machine") for r in runs)
    counts = Counter(json.dumps(m, sort_keys=True) for m in blocks if isinstance(m, dict))
    return [json.loads(key) for key, _ in counts.most_common()]  # ties: first seen first


def machine() -> dict[str, Any]:
    """This machine: CPU count and model, kernel, Python and lanes versions (what each run file
    records, and the summary's fallback for runs that record none)."""
    try:
        version = importlib.metadata.version("lanes")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return {
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "kernel": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "lanes": version,
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _iso(unix: float) -> str:
    return dt.datetime.fromtimestamp(unix, dt.timezone.utc).isoformat(timespec="seconds")


def _number(value: object) -> float | None:
    """``value`` as a float when it is a finite JSON number, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _present(values: Iterable[float | None]) -> list[float]:
    return [v for v in values if v is not None]


def _mean(stat: tuple[float, tuple[float, float]] | None) -> float | None:
    return None if stat is None else stat[0]


def _ci(stat: tuple[float, tuple[float, float]] | None) -> list[float] | None:
    return None if stat is None else [stat[1][0], stat[1][1]]
