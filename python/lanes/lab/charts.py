"""The report's charts, drawn from a summary (:mod:`lanes.lab.aggregate`) as PNG bytes.

- :func:`response_time_chart` — the field's comparison chart: response time lines (p50 dashed,
  p99 solid with its 95 % CI, per variant; left axis, ms, log scale when the values span more
  than 20x) over pressure bars (offered rate in grey, each variant's achieved rate in its colour;
  right axis, rps), one group of bars per load level.
- :func:`slo_goodput_chart` — SLO attainment (%) and goodput (rps) against load, per variant.
- :func:`density_chart` — per-device task density: the count of jobs running at once on each
  device over time, stacked, one panel per variant, from each variant's device timeline at one
  load level (:func:`timeline_density`).

Missing figures are gaps in the lines and a "no data" note, never an error. matplotlib draws
with the Agg canvas directly (no pyplot, no global backend switch).
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

LOG_SPAN = 20.0
"""The latency axis turns logarithmic when its largest value exceeds its smallest by this."""
NO_DATA = "no data"
_GREY = "0.55"


def _figure(width: float, height: float) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def png(fig: Figure) -> bytes:
    """The figure as PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


def level_labels(summary: Mapping[str, Any]) -> dict[int, str]:
    """Each level index across variants and its label: ``"40 rps"`` or ``"c=8"``."""
    labels: dict[int, str] = {}
    for variant in summary["variants"].values():
        for lv in variant["levels"]:
            if lv["level"] in labels:
                continue
            if lv["offered_rps"] is not None:
                labels[lv["level"]] = f"{lv['offered_rps']:g} rps"
            elif lv["concurrency"] is not None:
                labels[lv["level"]] = f"c={lv['concurrency']}"
            else:
                labels[lv["level"]] = f"L{lv['level']}"
    return dict(sorted(labels.items()))


def _series(variant: Mapping[str, Any], levels: Sequence[int], get: Any) -> list[float]:
    """``get(level)`` at each level index, NaN where the variant has no figure there."""
    by_index = {lv["level"]: lv for lv in variant["levels"]}
    out = []
    for index in levels:
        value = get(by_index[index]) if index in by_index else None
        out.append(math.nan if value is None else float(value))
    return out


def _no_data(ax: Axes, why: str = NO_DATA) -> None:
    ax.text(0.5, 0.5, why, transform=ax.transAxes, ha="center", va="center", color=_GREY)
    ax.set_xticks([])
    ax.set_yticks([])


def response_time_chart(summary: Mapping[str, Any]) -> bytes:
    """Response time over pressure (see the module doc)."""
    fig = _figure(10, 5.6)
    lat = fig.add_subplot()
    bars = lat.twinx()
    lat.set_zorder(bars.get_zorder() + 1)  # lines above the bars
    lat.patch.set_visible(False)
    labels = level_labels(summary)
    levels = list(labels)
    x = np.arange(len(levels), dtype=float)
    variants: Mapping[str, Any] = summary["variants"]
    offered = _first_offered(variants, levels)
    open_loop = any(not math.isnan(v) for v in offered)  # closed loop offers no rate: no bar
    slots = len(variants) + open_loop
    width = 0.8 / slots
    if open_loop:
        bars.bar(x - 0.4 + width / 2, offered, width, color="0.8", label="offered (rps)")
    shown: list[float] = []
    for i, (name, variant) in enumerate(variants.items()):
        color = f"C{i % 10}"
        achieved = _series(variant, levels, lambda lv: lv["achieved_rps"])
        bars.bar(x - 0.4 + width * (i + open_loop + 0.5), achieved, width, color=color, alpha=0.3,
                 label=f"{name} achieved (rps)")  # fmt: skip
        p50 = _series(variant, levels, lambda lv: lv["latency_ms"]["p50"])
        p99 = _series(variant, levels, lambda lv: lv["latency_ms"]["p99"])
        ci = [_series(variant, levels, lambda lv, k=k: _ci_end(lv, k)) for k in (0, 1)]
        err = np.array([np.subtract(p99, ci[0]), np.subtract(ci[1], p99)])
        lat.errorbar(x, p99, yerr=np.nan_to_num(err), fmt="-o", color=color, capsize=3,
                     label=f"{name} p99")  # fmt: skip
        lat.plot(x, p50, "--s", color=color, markersize=4, label=f"{name} p50")
        shown += [v for v in (*p50, *p99, *ci[0], *ci[1]) if v > 0 and not math.isnan(v)]
        for xi, value in zip(x, p99, strict=True):
            if math.isnan(value):
                lat.annotate(NO_DATA, (xi, 0), xycoords=("data", "axes fraction"),
                             xytext=(0, 4 + 11 * i), textcoords="offset points", ha="center",
                             fontsize="small", color=color)  # fmt: skip
    if not shown:
        lat.text(0.5, 0.6, f"{NO_DATA}: no latency measured", transform=lat.transAxes,
                 ha="center", color=_GREY, fontsize="large")  # fmt: skip
    slo = summary.get("slo_ms")
    if slo:
        lat.axhline(slo, color=_GREY, linestyle=":", label=f"SLO {slo:g} ms")
        shown.append(float(slo))
    if shown and max(shown) / min(shown) > LOG_SPAN:
        lat.set_yscale("log")
    lat.set_ylabel("response time (ms)")
    bars.set_ylabel(
        f"throughput (rps): {'offered grey, ' if open_loop else ''}achieved per variant"
    )
    lat.set_xticks(x, [labels[i] for i in levels])
    lat.set_xlabel(_load_axis(open_loop))
    lat.grid(True, which="major", alpha=0.3)
    lat.set_title("response time (lines: p99 solid with 95 % CI, p50 dashed) over pressure (bars)")
    # One legend column per variant (p99, p50, achieved), then the SLO and the offered load.
    entries: dict[str, Any] = {}
    for ax in (lat, bars):
        handles, names = ax.get_legend_handles_labels()
        entries.update(zip(names, handles, strict=True))
    order = [f"{n} {k}" for n in variants for k in ("p99", "p50", "achieved (rps)")]
    order = [k for k in order if k in entries] + [k for k in entries if k not in order]
    fig.legend([entries[k] for k in order], order, loc="outside lower center",
               ncol=len(variants) + 1, fontsize="small")  # fmt: skip
    return png(fig)


def _load_axis(open_loop: bool) -> str:
    return "offered load (open loop)" if open_loop else "concurrent connections (closed loop)"


def _first_offered(variants: Mapping[str, Any], levels: Sequence[int]) -> list[float]:
    out = []
    for index in levels:
        rates = [
            lv["offered_rps"]
            for v in variants.values()
            for lv in v["levels"]
            if lv["level"] == index and lv["offered_rps"] is not None
        ]
        out.append(float(rates[0]) if rates else math.nan)
    return out


def _ci_end(level: Mapping[str, Any], end: int) -> float | None:
    ci = level["latency_ms_ci"]["p99"]
    return None if ci is None else float(ci[end])


def slo_goodput_chart(summary: Mapping[str, Any]) -> bytes:
    """SLO attainment and goodput against load, per variant."""
    fig = _figure(10, 4.2)
    attain, good = fig.subplots(1, 2)
    labels = level_labels(summary)
    levels = list(labels)
    x = np.arange(len(levels), dtype=float)
    for i, (name, variant) in enumerate(summary["variants"].items()):
        color = f"C{i % 10}"
        share = _series(variant, levels, lambda lv: lv["slo_attainment"])
        attain.plot(x, [100 * v for v in share], "-o", color=color, label=name)
        goodput = _series(variant, levels, lambda lv: lv["goodput_rps"])
        good.plot(x, goodput, "-o", color=color, label=name)
    offered = _first_offered(summary["variants"], levels)
    if any(not math.isnan(v) for v in offered):
        good.plot(x, offered, ":", color=_GREY, label="offered")
    attain.axhline(99, color=_GREY, linestyle=":", label="99 %")
    slo = summary.get("slo_ms")
    within = f" within {slo:g} ms" if slo else ""
    axis = _load_axis(any(not math.isnan(v) for v in offered))
    attain.set(ylabel=f"requests{within} (%)", title="SLO attainment", xlabel=axis)
    good.set(ylabel="rps", title=f"goodput (answered{within})", xlabel=axis)
    for ax in (attain, good):
        ax.set_xticks(x, [labels[i] for i in levels])
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    attain.set_ylim(bottom=max(0.0, attain.get_ylim()[0]), top=101)
    good.set_ylim(bottom=0)
    return png(fig)


Density = dict[str, tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]]
"""Per device: sample times (s) and the count of jobs running from each time on."""


def timeline_density(path: Path) -> Density:
    """The per-device job count over time from a Chrome trace file (``GET /v2/trace``).

    Rule: ``"ph": "C"`` counters named ``"jobs <device>"`` give the count directly (``args.jobs``
    from each ``ts`` on); a trace without them is derived from its ``"ph": "X"`` slices, one
    device per ``tid`` (named by ``thread_name`` metadata when present): +1 at ``ts``, -1 at
    ``ts + dur``, ends before starts at the same instant. Times are seconds from the trace's
    first event. An unreadable or empty trace gives ``{}``.
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        raw = raw.get("traceEvents", []) if isinstance(raw, dict) else raw
        all_events = [e for e in raw if isinstance(e, dict)]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError, TypeError):
        return {}
    events = [e for e in all_events if isinstance(e.get("ts"), (int, float))]
    if not events:
        return {}
    start = min(float(e["ts"]) for e in events)
    steps: dict[str, list[tuple[float, float]]] = {}
    for e in events:
        name = str(e.get("name", ""))
        if e.get("ph") == "C" and name.startswith("jobs "):
            jobs = (e.get("args") or {}).get("jobs", 0)
            steps.setdefault(name[5:], []).append(((float(e["ts"]) - start) / 1e6, float(jobs)))
    if not steps:
        steps = _from_slices(all_events, start)
    out: Density = {}
    for device, points in sorted(steps.items()):
        points.sort(key=lambda p: p[0])
        out[device] = (np.array([p[0] for p in points]), np.array([p[1] for p in points]))
    return out


def _from_slices(
    events: list[dict[str, Any]], start: float
) -> dict[str, list[tuple[float, float]]]:
    names = {
        e.get("tid"): str(e["args"]["name"])
        for e in events
        if e.get("ph") == "M" and e.get("name") == "thread_name" and "name" in (e.get("args") or {})
    }
    deltas: dict[str, list[tuple[float, int]]] = {}
    for e in events:
        timed = isinstance(e.get("ts"), (int, float)) and isinstance(e.get("dur"), (int, float))
        if e.get("ph") != "X" or not timed:
            continue
        device = names.get(e.get("tid"), f"device {e.get('tid')}")
        begin = (float(e["ts"]) - start) / 1e6
        deltas.setdefault(device, []).extend([(begin, 1), (begin + float(e["dur"]) / 1e6, -1)])
    steps: dict[str, list[tuple[float, float]]] = {}
    for device, items in deltas.items():
        items.sort()  # at one instant -1 sorts before +1: ends first
        count = 0
        points = [(0.0, 0.0)]
        for t, d in items:
            count += d
            points.append((t, float(count)))
        steps[device] = points
    return steps


def _stack(density: Density) -> tuple[np.ndarray[Any, Any], list[np.ndarray[Any, Any]]]:
    """A common time grid and each device's count on it (step, held from each point on)."""
    grid = np.unique(np.concatenate([t for t, _ in density.values()]))
    counts = []
    for times, values in density.values():
        index = np.searchsorted(times, grid, side="right") - 1
        counts.append(np.where(index >= 0, values[np.clip(index, 0, None)], 0.0))
    return grid, counts


def density_chart(panels: Mapping[str, tuple[str, Density]]) -> bytes:
    """One panel per variant: ``panels[name] = (subtitle, density)``, stacked per device."""
    fig = _figure(10, 1.2 + 2.0 * max(1, len(panels)))
    axes = fig.subplots(max(1, len(panels)), 1, squeeze=False)[:, 0]
    if not panels:
        _no_data(axes[0], "no data: no timeline in this results folder")
    devices = sorted({d for _, density in panels.values() for d in density})
    colors = {d: f"C{i % 10}" for i, d in enumerate(devices)}  # one colour per device throughout
    for ax, (name, (subtitle, density)) in zip(axes, panels.items(), strict=False):
        ax.set_title(f"{name}: {subtitle}", fontsize="medium", loc="left")
        if not density:
            _no_data(ax, f"{NO_DATA}: no timeline for {name} at this level")
            continue
        grid, counts = _stack(density)
        ax.stackplot(grid, *counts, labels=list(density), colors=[colors[d] for d in density],
                     step="post", alpha=0.8)  # fmt: skip
        ax.set_ylabel("jobs at once")
        if grid[-1] > grid[0]:
            ax.set_xlim(grid[0], grid[-1])
        ax.set_ylim(0, max(1.0, float(np.max(np.sum(counts, axis=0)))) * 1.08)
        ax.yaxis.get_major_locator().set_params(integer=True)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", title="device")
    axes[-1].set_xlabel("time in the timeline (s)")
    fig.suptitle("per-device task density: jobs running at once, stacked by device")
    return png(fig)
