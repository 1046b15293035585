"""``lanes demo --sim``: the demo's question on the simulator, written like the lab's results.

:func:`run_sim_demo` simulates the built-in ``ocr`` host (:mod:`lanes.sim`, docs/sim.md) under
``independent``, ``fifo`` and ``sjf`` at :data:`LOADS` with ``seeds`` seeds, finds each
policy's capacity and writes into the output folder, atomically:

- ``sim.json``: the document of ``lanes sim --json`` (every point, every seed; the capacity);
- ``summary.json``: the lab's summary shape (:mod:`lanes.lab.aggregate`) where it applies —
  ``variants`` (one per policy) with ``capacity_at_slo``, ``capacity_search``,
  ``every_model_capacity`` and ``levels``, and ``ratios`` to ``independent`` — plus ``scenario``
  and ``loads``. A seed plays the part of a repeat (seeds are common random numbers: every
  policy sees the same requests, so ratios pair by seed). Figures are in requests/s;
  ``load`` is the simulator's load (a fraction of GPU capacity);
- ``report.html``: one offline page: the headline (:mod:`lanes.lab.headline`), the points
  table and, when matplotlib is installed, the plot of ``lanes sim --plot`` (also written as
  ``charts/sim.png``).

:func:`rebuild_report` writes the page again from a folder's ``summary.json`` and
``charts/sim.png`` alone (``lanes report`` on such a folder), against another baseline if asked.

Capacity: ``capacity_at_slo`` is the simulator's (every seed pooled, bisection on a 0.01 grid
of load, docs/sim.md); ``capacity_search`` repeats that search for each seed alone, giving
each seed a bracket ``[c, c + 0.01)`` of load, and so a mean with its 95 % interval.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import importlib.util
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lanes.errors import OUTPUT_FAILED, RESULTS_INVALID, LanesError
from lanes.lab import aggregate as agg
from lanes.lab.capacity import Bracket

if TYPE_CHECKING:
    from lanes.sim import SimResults

LOADS = (0.8, 1.2, 1.6, 2.0)
"""Loads of the built-in ``ocr`` host, which batches: from below ``independent``'s capacity (about
0.9) to past ``fifo``'s and ``sjf``'s (about 1.9; docs/results/sim.md)."""
POLICIES = ("independent", "fifo", "sjf")
REQUESTS = 50_000
GRID = 0.01
"""The simulator's capacity grid of load (crates/lanes-sim/src/capacity.rs)."""
TOP = 10.0
"""The top of that search for a host whose services batch, as ``ocr``'s do (1.0 without)."""
STEPS = math.ceil(math.log2(TOP / GRID))
"""Bisection steps of the simulator's search over (0, TOP] on that grid."""


def run_sim_demo(out: Path, seeds: int, command: str) -> SimResults:
    """Simulate, write the three files into ``out`` and return the :class:`SimResults`."""
    from lanes.sim import Scenario, capacity, run, seeds_from_count, write_json

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        reason = err.strerror or str(err)
        raise LanesError(OUTPUT_FAILED, f"--out {out}: cannot write there: {reason}") from None
    scenario = Scenario.load("ocr")
    seed_list = seeds_from_count(seeds)
    results = run(scenario, POLICIES, LOADS, seed_list, REQUESTS)
    results = results.with_capacity(capacity(scenario, POLICIES, seed_list, REQUESTS))
    per_seed = {s: capacity(scenario, POLICIES, [s], REQUESTS) for s in seed_list}
    write_json(out / "sim.json", results.to_json(command))
    summary = sim_summary(results.to_json(command), per_seed)
    agg.write_summary(out, summary=summary)
    plot = None
    if importlib.util.find_spec("matplotlib") is not None:
        from lanes.sim.plot import write_plot

        (out / "charts").mkdir(exist_ok=True)
        write_plot(results, out / "charts" / "sim.png")
        plot = (out / "charts" / "sim.png").read_bytes()
    from lanes.files import write_text_atomic

    write_text_atomic(out / "report.html", render(summary, plot, command))
    return results


def is_sim_folder(folder: Path) -> bool:
    """Whether ``folder`` holds a simulated demo (``sim.json`` and no lab ``runs/``)."""
    return (folder / "sim.json").is_file() and not (folder / "runs").is_dir()


def rebuild_report(
    folder: Path, *, baseline: str | None = None, out: Path | None = None
) -> tuple[Path, Path]:
    """Write ``folder``'s report page again (to ``out``, default ``folder/report.html``) from its
    ``summary.json`` and ``charts/sim.png``; with ``baseline``, the ratios and the summary are
    taken to that policy first. Returns the page's and the summary's paths. Nothing is written
    when the summary is missing or unreadable, or ``baseline`` is not one of its policies."""
    from lanes.files import write_text_atomic

    path = folder / "summary.json"
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise LanesError(
            RESULTS_INVALID, f"simulated demo {folder}: {path.name} unreadable ({err})"
        ) from None
    keys = summary if isinstance(summary, dict) else {}
    missing = [k for k in ("variants", "scenario", "command") if k not in keys]
    if missing:
        raise LanesError(
            RESULTS_INVALID, f"simulated demo {folder}: {path.name} lacks {', '.join(missing)}"
        )
    if baseline is not None:
        summary["ratios"] = agg.ratios(summary, baseline)  # refuses an unknown policy
        summary["baseline"] = baseline
        agg.write_summary(folder, summary=summary)
    chart = folder / "charts" / "sim.png"
    plot = chart.read_bytes() if chart.is_file() else None
    page = out if out is not None else folder / "report.html"
    write_text_atomic(page, render(summary, plot, str(summary["command"])))
    return page, path


def sim_summary(
    doc: Mapping[str, Any], per_seed: Mapping[int, Mapping[str, Mapping[str, float]]]
) -> dict[str, Any]:
    """The lab-shaped summary of a ``lanes sim --json`` document ``doc`` (with its pooled
    ``capacity``) and each seed's capacity ``{seed: {policy: {"overall", "every_service"}}}``."""
    points: list[Mapping[str, Any]] = doc["points"]
    first = points[0]
    per_load = first["offered_rps"] / first["load"]
    variants = {}
    for policy in doc["policies"]:
        own = [p for p in points if p["policy"] == policy]
        pooled = doc["capacity"][policy]["overall"]
        variants[policy] = {
            "capacity_at_slo": pooled * per_load if pooled > 0 else None,
            "capacity_unit": "rps",
            "capacity_load": pooled,
            "capacity_search": {
                **_capacity(per_seed, policy, "overall", per_load),
                "steps": STEPS,
            },
            "every_model_capacity": _capacity(per_seed, policy, "every_service", per_load),
            "levels": [
                _level(i, load, [p for p in own if p["load"] == load])
                for i, load in enumerate(doc["loads"])
            ],
        }
    summary: dict[str, Any] = {
        "experiment": f"demo-sim-{doc['scenario']}",
        "scenario": doc["scenario"],
        "command": doc["command"],
        "slo_ms": _slo_ms(doc["scenario"]),
        "baseline": "independent",
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "started": None,
        "machine": agg.machine(),
        "loads": doc["loads"],
        "variants": variants,
    }
    summary["ratios"] = agg.ratios(summary, "independent")
    return summary


def _slo_ms(scenario: str) -> float:
    from lanes.sim import Scenario

    return float(Scenario.load(scenario).slo_ms)


def _capacity(
    per_seed: Mapping[int, Mapping[str, Mapping[str, float]]], policy: str, key: str, scale: float
) -> dict[str, Any]:
    """A capacity block (lanes.lab.aggregate's) from each seed's capacity on the load grid: a
    bracket ``[c, c + GRID)``, open above at :data:`TOP` (every load met) and empty at 0 (none)."""
    brackets = {}
    for seed, caps in per_seed.items():
        load = caps[policy][key]
        low = load * scale if load > 0 else None
        high = (load + GRID) * scale if load < TOP - GRID / 2 else None
        brackets[seed] = Bracket(low, high if low is not None else GRID * scale)
    return agg.capacity_block(brackets)


def _level(index: int, load: float, points: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One load of one policy: means over seeds with their intervals, as the lab's levels."""

    def stat(get: Any, hi: float = math.inf) -> tuple[float | None, list[float] | None]:
        values = [float(v) for v in (get(p) for p in points) if v is not None]
        result = agg.mean_ci(values, lo=0, hi=hi)
        return (None, None) if result is None else (result[0], [result[1][0], result[1][1]])

    achieved = stat(lambda p: p["throughput_rps"])
    p50, p99 = stat(lambda p: p["latency_ms"]["p50"]), stat(lambda p: p["latency_ms"]["p99"])
    mean = stat(lambda p: p["latency_ms"]["mean"])
    attainment = stat(lambda p: p["slo_attainment"], hi=1)
    goodput = stat(lambda p: p["goodput_rps"])
    services = sorted(points[0]["services"]) if points else []
    return {
        "level": index,
        "load": load,
        "offered_rps": points[0]["offered_rps"] if points else None,
        "concurrency": None,
        "achieved_rps": achieved[0],
        "achieved_rps_ci": achieved[1],
        "latency_ms": {"p50": p50[0], "p99": p99[0], "mean": mean[0]},
        "latency_ms_ci": {"p50": p50[1], "p99": p99[1], "mean": mean[1]},
        "slo_attainment": attainment[0],
        "slo_attainment_ci": attainment[1],
        "goodput_rps": goodput[0],
        "goodput_rps_ci": goodput[1],
        "goodput_rps_by_repeat": {str(p["seed"]): p["goodput_rps"] for p in points},
        "repeats": len(points),
        "models": {
            name: {
                "p50_ms": agg.mean_or_none(p["services"][name]["p50"] for p in points),
                "p99_ms": agg.mean_or_none(p["services"][name]["p99"] for p in points),
                "mean_ms": agg.mean_or_none(p["services"][name]["mean"] for p in points),
                "slo_attainment": agg.mean_or_none(
                    p["services"][name]["slo_attainment"] for p in points
                ),
                "achieved_rps": agg.mean_or_none(
                    p["services"][name]["throughput_rps"] for p in points
                ),
            }
            for name in services
        },
    }


def render(summary: Mapping[str, Any], plot: bytes | None, command: str) -> str:
    """The report page of the simulated demo."""
    from lanes.lab.headline import NONE, headline, number
    from lanes.lab.report import html_page, html_table, leaders_html

    head = headline(summary)
    cap_rows = [("", [html.escape(c) for c in row]) for row in head.rows]
    level_rows = []
    for name, variant in summary["variants"].items():
        for lv in variant["levels"]:
            cells = [
                name, f"{lv['load']:g}", number(lv["offered_rps"]), number(lv["achieved_rps"]),
                number(lv["latency_ms"]["p50"]), number(lv["latency_ms"]["p99"]),
                NONE if lv["slo_attainment"] is None else f"{100 * lv['slo_attainment']:.2f} %",
                number(lv["goodput_rps"]),
            ]  # fmt: skip
            level_rows.append(("", [html.escape(c) for c in cells]))
    title = f"lanes demo --sim: {summary['scenario']}"
    seeds = len(summary["variants"][head.baseline]["capacity_search"]["repeats"])
    image = (
        f"<img alt='latency and SLO attainment against load' "
        f"src='data:image/png;base64,{base64.b64encode(plot).decode('ascii')}'>"
        if plot is not None
        else "<p class='note'>no plot: matplotlib is not installed</p>"
    )
    columns = ["policy", "load", "offered rps", "achieved rps", "p50 ms", "p99 ms",
               "SLO attainment", "goodput rps"]  # fmt: skip
    note = (
        f"{html.escape(command)} — the simulated host <b>{html.escape(summary['scenario'])}</b> "
        f"(docs/sim.md), SLO {number(summary['slo_ms'])} ms; each figure the mean over {seeds} "
        "seeds with its 95 % interval. Capacity: the highest load with at least 99 % of requests "
        "within the SLO, by bisection on a 0.01 grid of load, each seed alone; ratios to the "
        "baseline pair the seeds (every policy sees the same requests)."
    )
    return html_page(
        title,
        [
            f"<p class='note'>{note}</p>",
            "<h2>Capacity at SLO</h2>",
            html_table([html.escape(c) for c in head.columns], cap_rows),
            leaders_html(summary),
            "<h2>Latency and SLO attainment against load</h2>",
            image,
            "<h2>Points</h2>",
            html_table(columns, level_rows),
        ],
    )
