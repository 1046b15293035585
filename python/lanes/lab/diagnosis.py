"""The report's diagnosis: findings, flame graphs, per-core heat map, syscalls and threads.

:func:`collect` reads the ``diagnosis`` blocks of the profiled run files (docs/diagnosis.md)
into ``summary["diagnosis"]``: per variant, one entry per profiled run (level, repeat, findings,
core busy, threads, syscalls per request, flame graph files, skipped lines), and the **cost of
profiling**: per variant and profiled level, the profiled runs' achieved rate, goodput and p99
against the same level's unprofiled runs (the repeats ``[profile]`` left out), and the capacity
at SLO of the profiled repeats against the unprofiled ones. A cost needs both kinds of run; with
one repeat there is none to compare and the entry says so.

:func:`section` renders that as HTML: per variant and run the findings (each with its evidence
line), the flame graphs (the SVG files embedded as ``data:`` images, so the page stays one
file), a per-core heat map over the window (matplotlib, busy fraction per core and sample), the
top syscalls per request and the threads over time.
"""

from __future__ import annotations

import base64
import html
import json
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lanes.lab.aggregate import Run


def collect(root: Path, runs: Sequence[Run], summary_variants: Mapping[str, Any]) -> dict[str, Any]:
    """``summary["diagnosis"]`` from the run files (empty when nothing was profiled)."""
    out: dict[str, Any] = {}
    for run in runs:
        diag = run.data.get("diagnosis")
        if not isinstance(diag, Mapping):
            continue
        entry = out.setdefault(run.variant, {"runs": [], "cost": []})
        entry["runs"].append(
            {
                "level": run.level,
                "repeat": run.repeat,
                "offered": run.offered,
                "run": str(run.path.relative_to(root)),
                **{k: diag.get(k) for k in _KEYS},
            }
        )
    for name, entry in out.items():
        entry["runs"].sort(key=lambda r: (r["level"], r["repeat"]))
        entry["cost"] = _cost(
            [r for r in runs if r.variant == name], summary_variants.get(name, {})
        )
    return out


_KEYS = (
    "profile",
    "findings",
    "skipped",
    "core_busy",
    "threads",
    "syscalls_per_request",
    "dispersion_10ms",
    "flamegraphs",
)


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def _cost(runs: Sequence[Run], variant: Mapping[str, Any]) -> list[dict[str, Any]]:
    profiled_repeats = {r.repeat for r in runs if "diagnosis" in r.data}
    rows = []
    for level in sorted({r.level for r in runs if "diagnosis" in r.data}):
        at = [r for r in runs if r.level == level]
        yes = [r for r in at if "diagnosis" in r.data]
        no = [r for r in at if "diagnosis" not in r.data]
        row: dict[str, Any] = {
            "level": level,
            "offered": yes[0].offered,
            "unprofiled_runs": len(no),
        }
        for key in ("achieved_rps", "goodput_rps"):
            row[key] = [
                _mean([float(r.load[key]) for r in yes]),
                _mean([float(r.load[key]) for r in no]) if no else None,
            ]
        row["p99_ms"] = [
            _mean([r.latency("p99") for r in yes]),
            _mean([r.latency("p99") for r in no]) if no else None,
        ]
        rows.append(row)
    search = variant.get("capacity_search") or {}
    lows = {e["repeat"]: e.get("low") for e in search.get("repeats", [])}
    with_p = [v for r, v in lows.items() if r in profiled_repeats]
    without = [v for r, v in lows.items() if r not in profiled_repeats]
    if rows and with_p and without:
        rows.append({"capacity_at_slo": [_mean(with_p), _mean(without)]})
    return rows


# ---- HTML ---------------------------------------------------------------------------------


def section(root: Path, diagnosis: Mapping[str, Any]) -> str:
    """The report's diagnosis section (empty string when nothing was profiled)."""
    if not diagnosis:
        return ""
    parts = [
        "<h2>Diagnosis</h2>",
        "<p class='note'>Recorded while the load ran (docs/diagnosis.md): on-CPU and off-CPU "
        "stacks, syscalls, CPU per core, threads; findings name a cause and the number or "
        "frame it rests on.</p>",
    ]
    for name, entry in diagnosis.items():
        parts.append(f"<h3>{html.escape(name)}</h3>")
        parts.append(_cost_table(entry.get("cost", [])))
        for run in entry["runs"]:
            parts.append(_run_html(root, run))
    return "\n".join(parts)


def _fmt(v: float | None, unit: str = "") -> str:
    return "—" if v is None else f"{v:,.1f}{unit}"


def _cost_table(rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return ""
    body = []
    for row in rows:
        if "capacity_at_slo" in row:
            a, b = row["capacity_at_slo"]
            body.append(
                f"<tr><td class='name'>capacity at SLO</td>"
                f"<td>{_fmt(a)}</td><td>{_fmt(b)}</td></tr>"
            )
            continue
        for key, label in (
            ("achieved_rps", "achieved req/s"),
            ("goodput_rps", "goodput req/s"),
            ("p99_ms", "p99 ms"),
        ):
            a, b = row[key]
            body.append(
                f"<tr><td class='name'>load {_fmt(row['offered'])}: {label}</td>"
                f"<td>{_fmt(a)}</td><td>{_fmt(b)}</td></tr>"
            )
    note = (
        "<p class='note'>The cost of profiling: profiled runs against the same level's "
        "unprofiled repeats (— where every repeat was profiled).</p>"
    )
    head = "<tr><th class='name'></th><th>profiled</th><th>unprofiled</th></tr>"
    return f"{note}<table>{head}{''.join(body)}</table>"


def _run_html(root: Path, run: Mapping[str, Any]) -> str:
    title = f"load {_fmt(run.get('offered'))}, repeat {run['repeat']}"
    out = [f"<h4>{html.escape(title)}</h4>"]
    found = run.get("findings") or []
    if found:
        out.append("<ul>")
        for f in found:
            out.append(f"<li><b>{html.escape(f['code'])}</b>: {html.escape(f['message'])}</li>")
        out.append("</ul>")
    else:
        out.append("<p>No finding.</p>")
    for line in run.get("skipped") or []:
        out.append(f"<p class='note'>skipped: {html.escape(line)}</p>")
    folder = root / str(run["profile"]) if run.get("profile") else None
    for key, label in (("oncpu", "on-CPU"), ("offcpu", "off-CPU")):
        svg = (run.get("flamegraphs") or {}).get(key)
        if folder is not None and svg and (folder / svg).is_file():
            data = base64.b64encode((folder / svg).read_bytes()).decode()
            out.append(
                f"<p class='note'>{label} flame graph ({html.escape(str(folder / svg))})</p>"
                f"<img alt='{label} flame graph' src='data:image/svg+xml;base64,{data}'>"
            )
    if folder is not None:
        heat = _heatmap(folder / "profile.json")
        if heat is not None:
            out.append(
                "<p class='note'>CPU busy per core over the window (host, all processes)</p>"
                f"<img alt='per-core heat map' src='data:image/png;base64,{heat}'>"
            )
    calls = run.get("syscalls_per_request") or {}
    if calls:
        rows = "".join(
            f"<tr><td class='name'>{html.escape(k)}</td><td>{v:,.2f}</td></tr>"
            for k, v in calls.items()
        )
        out.append(
            f"<table><tr><th class='name'>syscall</th><th>per request</th></tr>{rows}</table>"
        )
    if folder is not None:
        out.append(_threads_table(folder / "profile.json"))
    return "\n".join(out)


def _profile(path: Path) -> Mapping[str, Any] | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, Mapping) else None


def _heatmap(path: Path) -> str | None:
    doc = _profile(path)
    cpu = (doc or {}).get("cpu") or {}
    samples = cpu.get("samples") or []
    if not samples:
        return None
    import numpy as np

    from lanes.lab.charts import _figure, png

    busy = np.array([[1.0 - c["idle"] - c["iowait"] for c in s["cores"]] for s in samples]).T
    fig = _figure(8.0, 0.5 + 0.35 * busy.shape[0])
    ax = fig.add_subplot(1, 1, 1)
    t_end = samples[-1]["t"]
    im = ax.imshow(
        busy,
        aspect="auto",
        vmin=0.0,
        vmax=1.0,
        cmap="inferno",
        extent=(0, t_end, busy.shape[0] - 0.5, -0.5),
    )
    ax.set_xlabel("seconds into the window")
    ax.set_ylabel("core")
    fig.colorbar(im, ax=ax, label="busy")
    return base64.b64encode(png(fig)).decode()


def _threads_table(path: Path) -> str:
    doc = _profile(path)
    procs = (doc or {}).get("processes") or {}
    if not procs or doc is None:
        return ""
    window = (doc.get("window") or {}).get("duration_s") or 0.0
    rate = (doc.get("requests") or 0) / window if window else 0.0
    rows = []
    for pid, p in procs.items():
        s = p.get("samples") or []
        if len(s) < 2:
            continue
        span = s[-1]["t"] - s[0]["t"] or 1.0
        vol = (s[-1]["ctx_voluntary"] - s[0]["ctx_voluntary"]) / span
        inv = (s[-1]["ctx_involuntary"] - s[0]["ctx_involuntary"]) / span
        cpu = (s[-1]["user_s"] + s[-1]["system_s"] - s[0]["user_s"] - s[0]["system_s"]) / span
        threads = [x["threads"] for x in s]
        step = max(1, len(threads) // 8)
        rows.append(
            f"<tr><td class='name'>{html.escape(pid)} {html.escape(p.get('name', ''))}</td>"
            f"<td>{cpu:.2f}</td><td class='name'>{' → '.join(str(t) for t in threads[::step])}</td>"
            f"<td>{vol:,.0f}</td><td>{inv:,.0f}</td>"
            f"<td>{_fmt((vol + inv) / rate if rate else None)}</td></tr>"
        )
    head = (
        "<tr><th class='name'>process</th><th>CPU (cores)</th><th class='name'>threads over "
        "time</th><th>voluntary switches/s</th><th>involuntary switches/s</th>"
        "<th>switches per request</th></tr>"
    )
    return f"<table>{head}{''.join(rows)}</table>" if rows else ""


# ---- text ---------------------------------------------------------------------------------


def text_lines(diagnosis: Mapping[str, Any]) -> list[str]:
    """The findings and the cost of profiling as plain lines, for the terminal."""
    lines: list[str] = []
    for name, entry in diagnosis.items():
        for run in entry["runs"]:
            where = f"{name} at load {_fmt(run.get('offered'))}, repeat {run['repeat']}"
            found = run.get("findings") or []
            if not found:
                lines.append(f"{where}: no finding")
            for f in found:
                lines.append(f"{where}: [{f['code']}] {f['message']}")
            for s in run.get("skipped") or []:
                lines.append(f"{where}: skipped: {s}")
        for row in entry.get("cost", []):
            if "capacity_at_slo" in row:
                a, b = row["capacity_at_slo"]
                lines.append(
                    f"{name}: cost of profiling: capacity at SLO {_fmt(a)} profiled vs {_fmt(b)}"
                    " unprofiled"
                )
                continue
            (a, b), (pa, pb) = row["goodput_rps"], row["p99_ms"]
            lines.append(
                f"{name}: cost of profiling at load {_fmt(row['offered'])}: goodput "
                f"{_fmt(a)} vs {_fmt(b)} req/s, p99 {_fmt(pa)} vs {_fmt(pb)} ms "
                f"(profiled vs {row['unprofiled_runs']} unprofiled runs)"
            )
    return lines
