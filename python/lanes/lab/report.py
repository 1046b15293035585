"""The lab's report: one self-contained HTML file and its charts, from a results folder.

:func:`build_report` aggregates the runs (:mod:`lanes.lab.aggregate`), writes ``summary.json``,
draws the charts (:mod:`lanes.lab.charts`) into ``RESULTS_DIR/charts/*.png`` and writes
``report.html``: the experiment's name, dates, machine and commands; the capacity at SLO of each
variant and its ratio to the baseline; the three charts; the summary table (means with 95 % CIs,
p99 as a ratio to the baseline at the same level); device and per-model tables; where the
server's time went when the servers kept request spans (:mod:`lanes.lab.spans`); the experiment
file. The page opens offline: inline CSS, charts embedded as base64 ``data:`` URIs, no script
and nothing fetched. A figure that is missing shows as "no data". Every file is written
atomically.
"""

from __future__ import annotations

import base64
import html
import importlib.util
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from lanes.errors import BAD_ARGUMENT, MISSING_DEPENDENCY, OUTPUT_FAILED, LanesError
from lanes.files import check_writable, write_atomic
from lanes.lab import aggregate as agg
from lanes.lab import call_clocks, diagnosis, host_noise, speed_probe
from lanes.lab.headline import NONE, headline, leaders, model_rows, number

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

NO_DATA = "no data"
CHARTS = ("response_time.png", "slo_goodput.png", "density.png")
"""The chart files written under ``RESULTS_DIR/charts/``."""


@dataclass(frozen=True)
class ReportFiles:
    """What :func:`build_report` wrote."""

    html: Path
    summary: Path
    charts: tuple[Path, ...]


def check_available() -> None:
    """Raise ``LanesError("missing_dependency", ...)`` early if matplotlib is missing."""
    if importlib.util.find_spec("matplotlib") is None:
        raise LanesError(MISSING_DEPENDENCY, "reports need matplotlib: pip install 'lanes[plot]'")


def build_report(
    results_dir: Path | str,
    *,
    baseline: str | None = None,
    out: Path | None = None,
    level: int | None = None,
    command: str | None = None,
) -> ReportFiles:
    """Write ``summary.json``, the charts and the HTML report of ``results_dir``.

    ``out`` is the HTML file (default ``RESULTS_DIR/report.html``); ``level`` the load level
    index whose timelines the density chart shows (default: the highest level with one);
    ``command`` the command line shown in the report.
    """
    from lanes.lab import charts

    root = Path(results_dir)
    check_available()
    summary = agg.aggregate(root, baseline)
    html_path = out if out is not None else root / "report.html"
    check_writable(html_path, "--out")
    chosen = timeline_level(summary, level)
    summary_path = agg.write_summary(root, summary=summary)
    panels = {
        name: _panel(root, variant, chosen, charts.level_labels(summary))
        for name, variant in summary["variants"].items()
    }
    images = {
        CHARTS[0]: charts.response_time_chart(summary),
        CHARTS[1]: charts.slo_goodput_chart(summary),
        CHARTS[2]: charts.density_chart(panels),
    }
    chart_dir = root / "charts"
    try:
        chart_dir.mkdir(exist_ok=True)
    except OSError as err:
        raise LanesError(OUTPUT_FAILED, f"cannot create {chart_dir}: {err.strerror}") from err
    for name, data in images.items():
        _write(chart_dir / name, data)
    page = render_html(summary, images, root, command, chosen)
    _write(html_path, page.encode())
    return ReportFiles(html_path, summary_path, tuple(chart_dir / n for n in images))


def timeline_level(summary: Mapping[str, Any], asked: int | None) -> int | None:
    """The level index the density chart shows: ``asked`` if it exists, else the highest level
    index where any variant has a timeline, else the highest level; None for no levels."""
    levels = sorted({lv["level"] for v in summary["variants"].values() for lv in v["levels"]})
    if asked is not None:
        if asked not in levels:
            have = ", ".join(str(i) for i in levels)
            raise LanesError(BAD_ARGUMENT, f"--level {asked}: no such load level (have: {have})")
        return asked
    with_timeline = [
        lv["level"] for v in summary["variants"].values() for lv in v["levels"] if lv["timelines"]
    ]
    return max(with_timeline) if with_timeline else (levels[-1] if levels else None)


def _panel(
    root: Path, variant: Mapping[str, Any], level: int | None, labels: Mapping[int, str]
) -> tuple[str, Any]:
    from lanes.lab.charts import timeline_density

    label = labels.get(level, NO_DATA) if level is not None else NO_DATA
    for lv in variant["levels"]:
        if lv["level"] == level and lv["timelines"]:
            path = lv["timelines"][0]
            return f"{label}, {path}", timeline_density(root / path)
    return f"{label}, no timeline", {}


def _write(path: Path, data: bytes) -> None:
    def write(f: IO[bytes]) -> None:
        f.write(data)

    write_atomic(path, write)


# ---- HTML ---------------------------------------------------------------------------------

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1280px; color: #222;
       padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { font-size: 1.2em; margin-top: 1.8em; }
table { border-collapse: collapse; margin: 0.6em 0; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid #ddd; padding: 3px 8px; text-align: right; vertical-align: top;
         white-space: nowrap; }
th { white-space: normal; } tr.first td { border-top: 2px solid #bbb; }
.wide { overflow-x: auto; }
th { background: #f3f3f3; } td.name, th.name { text-align: left; }
tr.miss td { background: #fdf0ef; } td.none { color: #999; }
table.meta td, table.meta th { text-align: left; border: none; padding: 1px 12px 1px 0; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.4em 0; }
.ci { color: #777; font-size: 0.8em; display: block; } .note { color: #555; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; }
"""


def render_html(
    summary: Mapping[str, Any],
    images: Mapping[str, bytes],
    root: Path,
    command: str | None,
    level: int | None,
) -> str:
    """The report page (see the module doc)."""
    from lanes.lab.charts import level_labels

    labels = level_labels(summary)
    base = summary["baseline"]
    ratios = agg.ratios(summary, base)["variants"]
    parts = [
        _meta(summary, root, command),
        _behind(summary),
        _late(summary),
        _DISTURBED.section(summary),
        _SLOW_HOST.section(summary),
        _STOPPED.section(summary),
        "<h2>Capacity at SLO</h2>",
        _capacity_note(summary),
        _capacity_table(summary, ratios),
        "<h2>Response time over pressure</h2>",
        _img(images, "response_time.png", "response time over offered and achieved throughput"),
        "<h2>SLO attainment and goodput</h2>",
        _img(images, "slo_goodput.png", "SLO attainment and goodput against load"),
        "<h2>Per-device task density</h2>",
        f"<p class='note'>Jobs running at once per device, stacked, at load "
        f"{html.escape(labels.get(level, NO_DATA) if level is not None else NO_DATA)} "
        f"(one repeat's timeline per variant).</p>",
        _img(images, "density.png", "jobs running at once per device over time"),
        "<h2>Summary</h2>",
        "<p class='note'>Means over repeats; grey brackets: 95 % confidence interval (Student's "
        "t, n - 1 degrees of freedom; one repeat gives none). Rows under 99 % SLO attainment "
        "are shaded. Rejected: queue full (429); dropped: deadline expired (504).</p>",
        _deadlines_note(summary),
        _summary_table(summary, ratios, labels),
        "<h2>Devices</h2>",
        _device_table(summary, labels),
        "<h2>Per-model capacity at SLO</h2>",
        "<p class='note'>The same rule on the same loads, for each model's own requests; the "
        "probes are placed for the overall capacity, so a model whose boundary lies elsewhere "
        "is resolved to the grid's gap there.</p>",
        html_table(
            ["variant", "model", "capacity at SLO [95 % CI]", "resolution"],
            [("", [html.escape(c) for c in _no_data(row)]) for row in model_rows(summary)],
        ),
        "<h2>Per-model latency and slowdown</h2>",
        "<p class='note'>Slowdown: the model's p50 under this load over its p50 unloaded.</p>",
        _model_table(summary, labels),
        _spans_section(summary, root, level, labels),
        diagnosis.section(root, summary.get("diagnosis") or {}),
        _experiment_file(root),
    ]
    return html_page(f"lanes lab: {summary['experiment']}", parts)


def _deadlines_note(summary: Mapping[str, Any]) -> str:
    """Which deadline each variant's requests carried (``workload.deadline_ms`` and the
    variants' own, docs/lab.md); empty when no variant sent one."""
    sent = {name: v.get("deadline_ms") for name, v in summary["variants"].items()}
    if not any(ms is not None for ms in sent.values()):
        return ""

    def said(ms: Any) -> str:
        if ms is None:
            return "none"
        if isinstance(ms, Mapping):
            return ", ".join(f"{m} {said(x)}" for m, x in ms.items())
        return f"{_num(ms)} ms"

    items = "; ".join(f"<b>{html.escape(n)}</b> {html.escape(said(ms))}" for n, ms in sent.items())
    return (
        "<p class='note'>Deadline sent with every request (a request still queued at it is "
        f"dropped, 504, and is never goodput): {items}.</p>"
    )


def _behind(summary: Mapping[str, Any]) -> str:
    """The runs whose load generators fell behind: left out of every figure, and why."""
    return _listed(
        "Runs left out: the load generators fell behind",
        "These runs measured their generators as much as the server (late sends or clock offset "
        "past the experiment's [cluster] bounds); no figure below includes them.",
        [
            f"{html.escape(str(b['id']))}: {html.escape('; '.join(b.get('reasons') or []))}"
            for b in summary.get("behind") or []
        ],
    )


def _listed(title: str, note: str, items: Sequence[str]) -> str:
    """A section naming runs or levels: ``title`` (text), ``note`` and ``items`` (HTML); empty
    when there are no items."""
    if not items:
        return ""
    rows = "".join(f"<li>{item}</li>" for item in items)
    return f"<h2>{html.escape(title)}</h2><p class='note'>{note}</p><ul>{rows}</ul>"


LATE_NOTE = 0.05
"""A level is listed by :func:`late_levels` when more than this share of its sends left late
(the cluster's default ``max_late_sends``) ..."""
LATE_SLO_SHARE = 0.1
"""... and its send delay's p99 exceeds this share of the SLO: a delay that matters to the
figures (a 2-core host's generators are a few ms late at any rate; a generator out of
connections, hundreds)."""


def late_levels(summary: Mapping[str, Any]) -> list[tuple[str, float, float, float]]:
    """``(variant, offered rps, late share, send delay p99 ms)`` of every level whose generators
    fell behind their schedule by :data:`LATE_NOTE` and :data:`LATE_SLO_SHARE` (open loop), in
    the summary's order."""
    bound = LATE_SLO_SHARE * float(summary["slo_ms"])
    out = []
    for name, v in summary["variants"].items():
        for lv in v["levels"]:
            late, rps = lv.get("late_sends_fraction"), lv.get("offered_rps")
            delay = lv.get("send_delay_p99_ms")
            if None in (late, rps, delay) or late <= LATE_NOTE or delay <= bound:
                continue
            out.append((str(name), float(rps), float(late), float(delay)))
    return out


def late_line(summary: Mapping[str, Any]) -> str | None:
    """One line naming the levels of :func:`late_levels` by variant, and what they mean; None
    when there are none."""
    rows = late_levels(summary)
    if not rows:
        return None
    by: dict[str, list[str]] = {}
    for name, rps, _, _ in rows:
        by.setdefault(name, []).append(f"{rps:g}")
    levels = "; ".join(f"{name} at {', '.join(r)} req/s" for name, r in by.items())
    worst = max(delay for *_, delay in rows)
    return (
        f"generators behind schedule (send delay p99 up to {worst:.0f} ms): {levels}. Latency "
        "there includes the wait for one of a generator's connections; raise [workload] "
        "connections to measure the server alone"
    )


def _late(summary: Mapping[str, Any]) -> str:
    """The levels whose generators could not keep their schedule, and what that means."""
    return _listed(
        "Load generators behind schedule",
        f"At these levels more than {100 * LATE_NOTE:.0f} % of sends left over the engine's "
        "<code>late_after</code> behind the schedule, and the send delay's p99 exceeded "
        f"{100 * LATE_SLO_SHARE:.0f} % of the SLO: every connection of a generator was waiting "
        "for a reply, or its CPU was saturated. Latency is still counted from each request's "
        "intended send time, so these figures include the wait for a connection, as a client "
        "with that many connections would see it; they fall faster past the knee than the "
        "server alone does. To measure the server past this point, raise <code>[workload] "
        "connections</code> (or <code>generators</code>).",
        [
            f"{html.escape(name)} at {_num(rps)} req/s: {100 * late:.0f} % of sends late, "
            f"send delay p99 {_num(delay)} ms"
            for name, rps, late, delay in late_levels(summary)
        ],
    )


@dataclass(frozen=True)
class _NamedRuns:
    """A kind of run the summary names under ``key`` (the host's noise, a slow host, the
    hypervisor's stops): how a run's figure reads, the terminal's line (``{runs}``: the runs
    with their figures) and the report's section."""

    key: str
    figure: Callable[[Mapping[str, Any]], str]
    line: str
    title: str
    note: str

    def named_line(self, summary: Mapping[str, Any]) -> str | None:
        """One line naming the runs; None when there are none."""
        rows = summary.get(self.key) or []
        if not rows:
            return None
        return self.line.format(runs=", ".join(f"{r['id']} ({self.figure(r)})" for r in rows))

    def section(self, summary: Mapping[str, Any]) -> str:
        """The report's section listing the runs with their figures and p99s."""
        return _listed(
            self.title,
            self.note,
            [
                f"{html.escape(str(r['id']))}: {self.figure(r)}, p99 {_num(r.get('p99_ms'))} ms"
                for r in summary.get(self.key) or []
            ],
        )


_DISTURBED = _NamedRuns(
    "disturbed",
    lambda r: f"{float(r['other_cores']):.2f} cores",
    "disturbed by the rest of the host (other processes or steal, >= "
    f"{host_noise.DISTURBED_CORES:g} cores over the window): {{runs}}. Their figures are "
    "partly the host's; rerun them on a quiet host, or compare them against their repeats",
    "Runs disturbed by the host",
    "During these runs' windows processes other than the server and the lab's own (the "
    "runner, the load generators), or the hypervisor's steal, took at least "
    f"{host_noise.DISTURBED_CORES:g} cores of this host. They stay in every figure, since "
    "how much of their tail the neighbour made cannot be told from the run; compare them "
    "against their repeats, or rerun on a quiet host.",
)
_SLOW_HOST = _NamedRuns(
    "slow_host",
    lambda r: f"{float(r['host_speed']):.2f}x",
    f"ran on a slow host (the speed probe's work >= {speed_probe.SLOW_HOST:g}x the median "
    "run's at the same load, no process to show for it): {runs}. Their tails are partly "
    "the host's; compare them against their repeats",
    "Runs on a slow host",
    "During these runs' windows the host ran the lab's speed probe (a fixed piece of work, "
    f"timed on its own thread's CPU clock) at least {speed_probe.SLOW_HOST:g} times as slow "
    "as the median run at the same load: a neighbour on the same physical cores, or the "
    "host's clock, slowed every thread, the server's included. They stay in every figure; "
    "compare them against their repeats.",
)
_STOPPED = _NamedRuns(
    "stopped",
    lambda r: f"{100 * float(r['stopped_tail']):.0f} % of the slowest calls' time",
    f"stopped by the hypervisor (the slowest {100 * call_clocks.TAIL:g} % of device calls "
    f"spent >= {100 * call_clocks.STOPPED_TAIL:g} % of their time neither running nor "
    "waiting for a core): {runs}. Their tails are partly the host's; compare them against "
    "their repeats",
    "Runs stopped by the hypervisor",
    f"In these runs the slowest {100 * call_clocks.TAIL:g} % of device calls spent at least "
    f"{100 * call_clocks.STOPPED_TAIL:g} % of their wall time neither running on their "
    "thread's CPU clock nor waiting in the run queue for a core: on the lab's single-"
    "threaded CPU devices, time the hypervisor gave their vCPU to another guest (each run's "
    "<code>calls</code> block). They stay in every figure; compare them against their "
    "repeats.",
)


def disturbed_line(summary: Mapping[str, Any]) -> str | None:
    """One line naming the runs the rest of the host disturbed (``summary["disturbed"]``,
    :mod:`lanes.lab.host_noise`); None when there are none."""
    return _DISTURBED.named_line(summary)


def slow_host_line(summary: Mapping[str, Any]) -> str | None:
    """One line naming the runs whose host ran slow (``summary["slow_host"]``,
    :mod:`lanes.lab.speed_probe`); None when there are none."""
    return _SLOW_HOST.named_line(summary)


def stopped_line(summary: Mapping[str, Any]) -> str | None:
    """One line naming the runs whose slowest calls the hypervisor stopped
    (``summary["stopped"]``, :mod:`lanes.lab.call_clocks`); None when there are none."""
    return _STOPPED.named_line(summary)


def html_page(title: str, parts: list[str]) -> str:
    """A self-contained page: ``title`` (text) as its title and heading, then ``parts``
    (HTML), with the report's inline CSS."""
    t = html.escape(title)
    head = f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>{t}</title>"
    return "\n".join(
        [head, f"<style>{_CSS}</style></head><body>", f"<h1>{t}</h1>", *parts, "</body></html>\n"]
    )


def _meta(summary: Mapping[str, Any], root: Path, command: str | None) -> str:
    m = summary["machine"]
    machine = (
        f"{m['cpus']} CPUs ({m['cpu_model']}), {m['kernel']}, Python {m['python']}, "
        f"lanes {m['lanes']}"
    )
    others = len(summary.get("machines") or ()) - 1
    if others > 0:
        machine += f" (most runs; {others} other machine(s) ran the rest: summary.json)"
    rows = [
        ("experiment", str(summary["experiment"])),
        ("runs started", summary.get("started") or NO_DATA),
        ("report created", str(summary["created"])),
        ("machine", machine),
        ("results", str(root)),
        ("SLO", f"{_num(summary.get('slo_ms'))} ms"),
        ("baseline", str(summary["baseline"])),
    ]
    rows += [(f"variant {name}", cmd) for name, cmd in _variant_commands(root)]
    if command:
        rows.append(("command", command))
    cells = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
    return f"<table class='meta'>{cells}</table>"


def _variant_commands(root: Path) -> list[tuple[str, str]]:
    """``(name, command)`` of each variant the experiment file names with a command."""
    try:
        raw = tomllib.loads((root / "experiment.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    variants = raw.get("variants", raw.get("variant", []))
    items: Iterable[tuple[str, Any]]
    if isinstance(variants, dict):
        items = variants.items()
    elif isinstance(variants, list):
        items = ((str(v.get("name", i)), v) for i, v in enumerate(variants) if isinstance(v, dict))
    else:
        return []
    out = []
    for name, body in items:
        if isinstance(body, dict):
            cmd = body.get("command") or body.get("url")
            if isinstance(cmd, (str, list)):
                out.append((name, cmd if isinstance(cmd, str) else " ".join(map(str, cmd))))
    return out


def _img(images: Mapping[str, bytes], name: str, alt: str) -> str:
    data = base64.b64encode(images[name]).decode("ascii")
    return f"<img alt='{html.escape(alt)}' src='data:image/png;base64,{data}'>"


def html_table(head: list[str], rows: list[tuple[str, list[str]]]) -> str:
    """A table: the first column is a name; ``rows`` are ``(css class, cells)``; cells are
    already-escaped HTML."""
    th = "".join(
        f"<th class='name'>{h}</th>" if i == 0 else f"<th>{h}</th>" for i, h in enumerate(head)
    )
    body = []
    for css, cells in rows:
        tds = "".join(
            f"<td class='{'name' if i == 0 else 'none' if c == NO_DATA else ''}'>{c}</td>"
            for i, c in enumerate(cells)
        )
        body.append(f"<tr class='{css}'>{tds}</tr>")
    return f"<table><thead><tr>{th}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _capacity_note(summary: Mapping[str, Any]) -> str:
    steps = max(int(v["capacity_search"]["steps"]) for v in summary["variants"].values())
    search = (
        f"then {steps} bisection step{'s' if steps != 1 else ''} between the highest load that "
        "met it and the lowest that missed"
        if steps
        else "no bisection (the experiment asks for none: workload.capacity_search)"
    )
    return (
        f"<p class='note'>The highest load at which at least 99 % of requests were answered "
        f"within the SLO ({_num(summary.get('slo_ms'))} ms), found in each repeat from its grid "
        f"levels, {search}; mean over repeats with its 95 % interval (Student's t). Resolution: "
        "the boundary lies below capacity + resolution. Ratios to the baseline "
        f"<b>{html.escape(summary['baseline'])}</b> are taken repeat by repeat (the variants of "
        "a repeat ran interleaved), mean with its 95 % interval. <i>On the grid</i>: the highest "
        "grid level whose mean attainment met the SLO.</p>"
    )


def _capacity_table(summary: Mapping[str, Any], ratios: Mapping[str, Any]) -> str:
    head = headline(summary)
    rows = []
    for cells, (name, variant) in zip(head.rows, summary["variants"].items(), strict=True):
        unit = "rps" if variant.get("capacity_unit", "rps") == "rps" else "concurrent"
        cap = variant["capacity_at_slo"]
        grid = [
            NO_DATA if cap is None else f"{_num(cap)} {unit}",
            _ratio(ratios[name]["capacity"]),
        ]
        rows.append(("", [html.escape(c) for c in _no_data(cells)] + grid))
    base = html.escape(summary["baseline"])
    columns = [html.escape(c) for c in head.columns] + ["on the grid", f"grid vs {base}"]
    return f"<div class='wide'>{html_table(columns, rows)}</div>{leaders_html(summary)}"


def leaders_html(summary: Mapping[str, Any]) -> str:
    """The line of :func:`lanes.lab.headline.leaders` as a paragraph; empty without one."""
    line = leaders(summary)
    return "" if line is None else f"<p><b>{html.escape(line)}</b></p>"


def _no_data(cells: list[str]) -> list[str]:
    return [NO_DATA if c == NONE else c for c in cells]


def _summary_table(
    summary: Mapping[str, Any], ratios: Mapping[str, Any], labels: Mapping[int, str]
) -> str:
    head = [
        "variant", "load", "repeats", "achieved rps", "p50 ms", "p99 ms",
        f"p99 vs {html.escape(summary['baseline'])}", "SLO attainment", "goodput rps",
        "rejected", "dropped", "errors", "CPU idle", "device busy",
    ]  # fmt: skip
    entries = [
        (lv["level"], i, name, lv, p99_ratio)
        for i, (name, variant) in enumerate(summary["variants"].items())
        for lv, p99_ratio in zip(variant["levels"], ratios[name]["p99"], strict=True)
    ]
    rows = []
    previous = None
    for level, _, name, lv, p99_ratio in sorted(entries, key=lambda e: e[:2]):
        attain = lv["slo_attainment"]
        css = "miss" if attain is None or attain < agg.SLO_TARGET else ""
        css += " first" if level != previous and previous is not None else ""
        previous = level
        busy = "<br>".join(
            f"{html.escape(d)} {_pct(v.get('busy_fraction'))}" for d, v in lv["device"].items()
        )
        cells = [
            html.escape(name),
            html.escape(labels.get(lv["level"], str(lv["level"]))),
            str(lv["repeats"]),
            _with_ci(lv["achieved_rps"], lv["achieved_rps_ci"]),
            _with_ci(lv["latency_ms"]["p50"], lv["latency_ms_ci"]["p50"]),
            _with_ci(lv["latency_ms"]["p99"], lv["latency_ms_ci"]["p99"]),
            _ratio(p99_ratio),
            _with_ci(attain, lv.get("slo_attainment_ci"), _pct),
            _with_ci(lv["goodput_rps"], lv.get("goodput_rps_ci")),
            _num(lv["rejected"]),
            _num(lv["dropped"]),
            _num(lv.get("errors")),
            _pct(lv["cpu_idle"]),
            busy or NO_DATA,
        ]
        rows.append((css.strip(), cells))
    return f"<div class='wide'>{html_table(head, rows)}</div>"


def _device_table(summary: Mapping[str, Any], labels: Mapping[int, str]) -> str:
    head = ["variant", "load", "device", "busy", "idle while work waited (s)", "overlap (s)",
            "jobs"]  # fmt: skip
    rows = []
    for name, variant in summary["variants"].items():
        for lv in variant["levels"]:
            load = html.escape(labels.get(lv["level"], str(lv["level"])))
            if not lv["device"]:
                rows.append(("", [html.escape(name), load, NO_DATA, *[NO_DATA] * 4]))
            for device, d in lv["device"].items():
                cells = [
                    html.escape(name), load, html.escape(device), _pct(d.get("busy_fraction")),
                    _num(d.get("idle_while_waiting_s")), _num(d.get("overlap_s")),
                    _num(d.get("jobs")),
                ]  # fmt: skip
                rows.append(("", cells))
    return html_table(head, rows)


def _model_table(summary: Mapping[str, Any], labels: Mapping[int, str]) -> str:
    head = ["variant", "load", "model", "p50 ms", "p99 ms", "slowdown", "SLO attainment"]
    rows = []
    for name, variant in summary["variants"].items():
        for lv in variant["levels"]:
            load = html.escape(labels.get(lv["level"], str(lv["level"])))
            if not lv["models"]:
                rows.append(("", [html.escape(name), load, NO_DATA, *[NO_DATA] * 4]))
            for model, m in lv["models"].items():
                cells = [
                    html.escape(name), load, html.escape(model), _num(m.get("p50_ms")),
                    _num(m.get("p99_ms")), _ratio(m.get("slowdown")),
                    _pct(m.get("slo_attainment")),
                ]  # fmt: skip
                rows.append(("", cells))
    return html_table(head, rows)


def _spans_section(
    summary: Mapping[str, Any], root: Path, level: int | None, labels: Mapping[int, str]
) -> str:
    """ "Where the server's time went": per variant and model, each part's p50 / p99 from the
    request spans of the chosen level's timelines (:mod:`lanes.lab.spans`); empty when no
    variant's server kept spans there."""
    from lanes.lab import spans

    rows = []
    for name, variant in summary["variants"].items():
        for lv in variant["levels"]:
            if lv["level"] != level:
                continue
            for model, row in spans.table(spans.level_spans(root, lv["timelines"])).items():
                cells = [html.escape(name), html.escape(model), str(row["requests"])]
                cells += [f"{row[p][0]:.2f} / {row[p][1]:.2f}" for p in spans.PARTS]
                rows.append(("", cells))
    if not rows:
        return ""
    load = html.escape(labels.get(level, NO_DATA) if level is not None else NO_DATA)
    return "".join(
        [
            "<h2>Where the server's time went</h2>",
            f"<p class='note'>Request spans (<code>lanes serve --trace-requests</code>) at load "
            f"{load}, every repeat pooled: p50 / p99 in ms of each part. Batch wait: from the "
            "request's arrival in the scheduler to its batch's start; call: the batch's run; "
            "hooks: decoding and the pre- and post-processing hooks; hand-offs: every wait for a "
            "thread between them, and the encoding. The parts add up to the server's total; "
            "the client saw its send and receive on top.</p>",
            html_table(["variant", "model", "requests", *[f"{p} ms" for p in spans.PARTS]], rows),
        ]
    )


def _experiment_file(root: Path) -> str:
    try:
        text = (root / "experiment.toml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return "<h2>Experiment file</h2><p class='note'>no data: no experiment.toml</p>"
    return (
        "<h2>Experiment file</h2><details><summary>experiment.toml</summary>"
        f"<pre>{html.escape(text)}</pre></details>"
    )


def _num(value: float | None) -> str:
    """A figure with about three significant digits; ``no data`` for None."""
    return number(value, NO_DATA)


def _pct(value: float | None) -> str:
    return NO_DATA if value is None else f"{100 * float(value):.1f} %"


def _ratio(value: float | None) -> str:
    return NO_DATA if value is None else f"{float(value):.2f}\N{MULTIPLICATION SIGN}"


def _with_ci(
    value: float | None, ci: list[float] | None, fmt: Callable[[float | None], str] = _num
) -> str:
    if value is None:
        return NO_DATA
    if ci is None or ci[0] == ci[1]:
        return fmt(value)
    return f"{fmt(value)} <span class='ci'>[{fmt(ci[0])}, {fmt(ci[1])}]</span>"
