"""The text output of ``lanes sim``: a results table and an optional capacity table (rich).

One row per (policy, load), each figure the mean over seeds; latencies in ms. On a terminal the
tables use colour (an SLO attainment under 99 % in red); anywhere else (a pipe, a file, a test)
they are plain text — no escape codes — and still aligned, never wrapped to 80 columns.
"""

from __future__ import annotations

import math
import sys
from typing import TextIO

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from lanes.sim.runner import Row, SimResults

SLO_TARGET = 0.99
_PLAIN_WIDTH = 250


def make_console(file: TextIO | None = None) -> Console:
    """A console on ``file`` (stdout): colour on a terminal, plain and unwrapped elsewhere."""
    out = file if file is not None else sys.stdout
    tty = bool(getattr(out, "isatty", lambda: False)())
    return Console(
        file=out,
        force_terminal=None if tty else False,
        no_color=not tty,
        width=None if tty else _PLAIN_WIDTH,
        highlight=False,
        markup=False,
        emoji=False,
    )


def print_results(results: SimResults, file: TextIO | None = None) -> None:
    """Print the results table and, when present, the capacity table."""
    console = make_console(file)
    console.print(results_table(results))
    if results.capacity is not None:
        console.print()
        console.print(capacity_table(results))


def results_table(results: SimResults) -> Table:
    """One row per (policy, load); the last column is each service's p99, in scenario order."""
    scenario = results.scenario
    services = "/".join(scenario.service_names)
    title = (
        f"{scenario.name}: {results.requests:,} requests x {len(results.seeds)} seed(s), "
        f"SLO {scenario.slo_ms:g} ms; mean over seeds"
    )
    table = Table(
        title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True
    )
    table.add_column("policy", overflow="fold", min_width=11)
    for header in (
        "load", "tput\nrps", "mean\nms", "p50\nms", "p99\nms", "p99.9\nms",
        "SLO\n%", "GPU\nbusy %", "CPU\nidle %",
    ):  # fmt: skip
        table.add_column(header, justify="right", no_wrap=True)
    table.add_column(f"p99 ms\n{services}", justify="right", overflow="fold")
    previous = None
    for row in results.rows():
        if previous is not None and row.policy != previous:
            table.add_section()
        previous = row.policy
        table.add_row(*_cells(row, scenario.service_names))
    return table


def _cells(row: Row, services: list[str]) -> list[Text]:
    slo_style = "red" if row.slo_attainment < SLO_TARGET else "green"
    return [
        Text(row.policy, style="bold"),
        Text(f"{row.load:g}"),
        Text(_rate(row.throughput_rps)),
        Text(_ms(row.mean_ms)),
        Text(_ms(row.p50_ms)),
        Text(_ms(row.p99_ms)),
        Text(_ms(row.p999_ms)),
        Text(_slo(row.slo_attainment), style=slo_style),
        Text(_percent(row.gpu_busy)),
        Text(_percent(row.cpu_idle)),
        Text("/".join(_ms(row.service_p99_ms[name]) for name in services)),
    ]


def capacity_table(results: SimResults) -> Table:
    """Per policy, the highest load meeting the SLO for 99 % of requests."""
    table = Table(
        title="capacity: highest load with >= 99 % of requests within SLO",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )
    table.add_column("policy", no_wrap=True)
    table.add_column("overall", justify="right")
    table.add_column("every service", justify="right")
    for policy, cap in (results.capacity or {}).items():
        table.add_row(
            Text(policy, style="bold"),
            Text(_load(cap.get("overall"))),
            Text(_load(cap.get("every_service"))),
        )
    return table


def _ms(x: float) -> str:
    """Milliseconds with 3 significant figures up to 100, whole numbers above."""
    if not math.isfinite(x):
        return "-"
    if x < 10:
        return f"{x:.2f}"
    if x < 100:
        return f"{x:.1f}"
    return f"{x:,.0f}"


def _rate(x: float) -> str:
    if not math.isfinite(x):
        return "-"
    return f"{x:,.1f}" if x < 10_000 else f"{x:,.0f}"


def _percent(x: float) -> str:
    return f"{100 * x:.1f}" if math.isfinite(x) else "-"


def _slo(x: float) -> str:
    """Attainment in %, two decimals rounded down (99.996 is not 100); all met shows 100."""
    if not math.isfinite(x):
        return "-"
    return "100" if x >= 1.0 else f"{math.floor(x * 10_000) / 100:.2f}"


def _load(x: float | None) -> str:
    return f"{x:.2f}" if x is not None and math.isfinite(x) else "-"
