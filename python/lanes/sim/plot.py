"""``lanes sim --plot``: latency and SLO attainment against load, one colour per policy.

Left: p99 latency (solid) and mean latency (dashed) on a log scale, with the SLO as a dotted
line; right: SLO attainment in %. Each point is the mean over seeds. matplotlib is an optional
extra (``pip install 'lanes[plot]'``), imported only here and only when a plot is asked for; it
draws with the Agg canvas directly (no pyplot, no global backend switch). The PNG is written
atomically.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import IO

from lanes.errors import MISSING_DEPENDENCY, LanesError
from lanes.files import write_atomic
from lanes.sim.runner import Row, SimResults


def check_available() -> None:
    """Raise ``LanesError("missing_dependency", ...)`` early if matplotlib is missing."""
    if importlib.util.find_spec("matplotlib") is None:
        raise LanesError(MISSING_DEPENDENCY, "--plot needs matplotlib: pip install 'lanes[plot]'")


def write_plot(results: SimResults, path: Path) -> None:
    """Draw the results and write them as a PNG to ``path``."""
    check_available()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    latency, slo = fig.subplots(1, 2)
    by_policy: dict[str, list[Row]] = {}
    for row in results.rows():
        by_policy.setdefault(row.policy, []).append(row)
    for i, (policy, rows) in enumerate(by_policy.items()):
        rows.sort(key=lambda r: r.load)
        loads = [r.load for r in rows]
        color = f"C{i % 10}"
        latency.plot(loads, [r.p99_ms for r in rows], "-o", color=color, label=policy)
        latency.plot(loads, [r.mean_ms for r in rows], "--", color=color)
        slo.plot(loads, [100 * r.slo_attainment for r in rows], "-o", color=color, label=policy)
    slo_ms = results.scenario.slo_ms
    latency.axhline(slo_ms, color="grey", linestyle=":", label=f"SLO {slo_ms:g} ms")
    latency.set_yscale("log")
    latency.set(xlabel="load", ylabel="latency (ms)", title="latency: p99 solid, mean dashed")
    latency.legend(fontsize="small")
    latency.grid(True, which="both", alpha=0.3)
    slo.axhline(99, color="grey", linestyle=":", label="99 %")
    slo.set(xlabel="load", ylabel="requests within SLO (%)", title="SLO attainment")
    slo.legend(fontsize="small")
    slo.grid(True, alpha=0.3)
    fig.suptitle(f"lanes sim {results.scenario.name}: mean over {len(results.seeds)} seed(s)")

    def write(f: IO[bytes]) -> None:
        fig.savefig(f, format="png", dpi=110)

    write_atomic(path, write)
