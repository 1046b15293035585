"""How far each figure moves with the calls' cost, and what cost would close its miss (the
thirty-fifth round, docs/results/calibration.md).

The committed file is short on the short models' p99 at 600-800 req/s on nearly every grid of the
earlier host (round 29's by_model.py: ``char_cnn`` -43 % under ``independent`` at 800 req/s),
and rounds 30-34 tried mechanisms for it one by one. This asks a question before any mechanism:
is the miss one a small error in the calls' cost would make? Near the knee a queue's wait grows
as 1 / (1 - utilisation), so a tail there can move by many times what the cost moves; if the
hour's cost is known only to a few per cent, such a figure cannot be predicted within 15 %.

**Rule.** For each of the fifteen grids of the earlier host (round 29's list) the committed
file's source is scaled to the grid's hour (hour_speed.py against grid 157, as judge_all.sh
does) and then by each multiplier ``m`` of :data:`MULTIPLIERS` (every runtime call's cost,
``at_hour``), and simulated as :data:`WINDOWS` windows of the grid's measurement window at
each rate of :data:`RATES`, each variant as against_demo.py ``--grid`` sets it; the same
seeds for every ``m`` (common random numbers), so that the differences are the cost's. Per
grid, variant, rate and figure (the overall p50, p99 and goodput, and each model's p99):

- the *elasticity* ``E = ln(f(1.05) / f(0.95)) / ln(1.05 / 0.95)``: a 1 % dearer call moves the
  figure by about ``E`` %;
- the *15 % cost*, ``ln(1.15) / |E|``: the error in the calls' cost that alone moves the figure
  by 15 %;
- the *closing multiplier*: the ``m`` at which the simulated figure meets the lab's mean (the
  first bracket of the multipliers it falls in, log-linear within it; ``< 0.90`` or ``> 1.10``
  with the default ones when outside them all, by the nearer end).

``--scale`` multiplies another input instead (the requests' pre and post, a wait table, the
host's spells or the rest of the host's CPU: :func:`scaled`), ``--only`` the calls of some
services alone, and ``--multipliers`` sets the m; E is then read between the multipliers next
below and above 1.

Printed per variant, rate and figure, over the grids on which the rate is below the knee (the
lab's mean goodput at least 90 % of the offer, compare.py's rule): the median error at
``m = 1``, the median elasticity, the median 15 % cost, and the closing multiplier's median
(the lower middle one for an even count, so that a bound is never averaged with a value).
Beside it, per grid, the hour's speed read at the lightest level and over every level
(hour_speed.py): how well the hour's cost is known. The raw figures go to ``--json``.

Run, from the repository root (about 12 minutes on this host):
  PYTHONPATH=bench/calibrate .venv/bin/python docs/results/calibration/round35/sensitivity.py \
    [--scenario FILE] [--json OUT.json] [--markdown OUT.md] [--windows 100] [--grids 15]
    [--scale calls|phases|host|busy-wakes|preempts|holds|client|spells|others]
    [--multipliers 0.9,0.95,1,1.05,1.1] [--only SERVICE,...]
  ... sensitivity.py --from OUT.json [--markdown OUT.md]   (the tables again, nothing simulated)
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from against_demo import GRID_AS_SIMULATED
from compare import KNEE, WARM_SHARE, load_runs, scenario_rate
from default_question import with_threads
from hour_speed import at_hour, hour_speed

from lanes import sim
from lanes._core import parse_policy
from lanes.sim.scenario import Scenario

C = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(C / "round29"))
from by_model import GRIDS, REFERENCE, SCENARIO  # noqa: E402  (round 29's fifteen grids)

MULTIPLIERS = (0.90, 0.95, 1.00, 1.05, 1.10)
RATES = (200.0, 400.0, 600.0, 800.0)
WINDOWS = 100
TARGET = 0.15
SCALES = (
    "calls", "phases", "host", "busy-wakes", "preempts", "holds", "client", "spells", "others",
)  # fmt: skip
"""What ``--scale`` can multiply (:func:`scaled`)."""
WAIT_TABLES = {
    "busy-wakes": ("pre_wake_busy_ms", "post_wake_busy_ms"),
    "preempts": ("call_preempt_ms",),
    "holds": ("device_hold_ms", "device_hold_busy_ms"),
    "client": ("client_ms",),
}
"""The ``--scale`` names that multiply every wait of these host tables."""


def key(variant: str, rate: float, figure: str) -> str:
    """A figure's name in the JSON: ``variant|rate|figure``."""
    return f"{variant}|{rate:g}|{figure}"


def lab(runs: list[dict]) -> dict[str, float]:
    """The lab's figures: the mean over a level's repeats of p50, p99, goodput and each model's
    p99; plus ``goodput_share`` (goodput over the offer) to tell the knee."""
    acc: dict[str, list[float]] = defaultdict(list)
    for r in runs:
        rate = float(r["offered"]["rate_rps"])
        load = r["load"]
        acc[key(r["variant"], rate, "p50")].append(load["latency_ms"]["p50"])
        acc[key(r["variant"], rate, "p99")].append(load["latency_ms"]["p99"])
        acc[key(r["variant"], rate, "goodput")].append(load["goodput_rps"])
        acc[key(r["variant"], rate, "goodput_share")].append(load["goodput_rps"] / rate)
        for model, m in load.get("models", {}).items():
            acc[key(r["variant"], rate, f"p99:{model}")].append(m["latency_ms"]["p99"])
    return {k: statistics.fmean(v) for k, v in acc.items()}


def points_at(
    scenario: Scenario, variant: str, rate: float, window_s: float, windows: int
) -> list[dict]:
    """The simulator's points for ``variant`` (as against_demo.py ``--grid`` sets it) at
    ``rate``: ``windows`` runs (seeds 1..windows) as long as a lab window of ``window_s``."""
    policy, threads = GRID_AS_SIMULATED[variant]
    sc = with_threads(scenario, threads)
    n = max(1, round(rate * window_s / (1 - WARM_SHARE)))
    load = rate / scenario_rate(scenario)
    seeds = list(range(1, windows + 1))
    return sim.run(sc, [parse_policy(policy)], [load], seeds=seeds, requests=n).points


def simulated(scenario: Scenario, window_s: float, windows: int) -> dict[str, float]:
    """The same figures from the simulator: means over ``windows`` windows."""
    out: dict[str, float] = {}
    for variant in GRID_AS_SIMULATED:
        for rate in RATES:
            figures: dict[str, list[float]] = defaultdict(list)
            for p in points_at(scenario, variant, rate, window_s, windows):
                figures["p50"].append(p["latency_ms"]["p50"])
                figures["p99"].append(p["latency_ms"]["p99"])
                figures["goodput"].append(p["goodput_rps"])
                for svc in scenario.services:
                    figures[f"p99:{svc.name}"].append(p["services"][svc.name]["latency_ms"]["p99"])
            for figure, xs in figures.items():
                out[key(variant, rate, figure)] = statistics.fmean(xs)
    return out


def elasticity(by_m: dict[float, float]) -> float:
    """The module docs' ``E``, from the figures at the multipliers next below and above 1 (0.95
    and 1.05 by default; 0 where either figure is 0)."""
    m_lo = max(m for m in by_m if m < 1.0)
    m_hi = min(m for m in by_m if m > 1.0)
    lo, hi = by_m[m_lo], by_m[m_hi]
    if lo <= 0 or hi <= 0:
        return 0.0
    return math.log(hi / lo) / math.log(m_hi / m_lo)


def closing(by_m: dict[float, float], target: float) -> float:
    """The multiplier at which the figure meets ``target`` (module docs); 0.0 for below the
    lowest multiplier simulated, ``inf`` for above the highest."""
    ms = sorted(by_m)
    for a, b in itertools.pairwise(ms):
        fa, fb = by_m[a], by_m[b]
        if (fa - target) * (fb - target) <= 0 and fa != fb:
            if min(fa, fb, target) > 0:
                t = (math.log(target) - math.log(fa)) / (math.log(fb) - math.log(fa))
            else:
                t = (target - fa) / (fb - fa)
            return math.exp(math.log(a) + t * (math.log(b) - math.log(a)))
    nearer_low = abs(by_m[ms[0]] - target) <= abs(by_m[ms[-1]] - target)
    return 0.0 if nearer_low else math.inf


def scaled(scenario: Scenario, m: float, what: str, only: frozenset[str] = frozenset()) -> Scenario:
    """``scenario`` with the input ``what`` names x ``m``:

    - ``calls``: every runtime call's cost (hour_speed.py's ``at_hour``); ``phases``: every
      request's pre and post; ``host``: both. With ``only``, those services' alone.
    - ``busy-wakes``: every wait of ``host.pre_wake_busy_ms`` and ``post_wake_busy_ms`` (the
      woken thread's wait for a core the device threads hold); ``preempts``: of
      ``host.call_preempt_ms`` (the calls' wall time's tail); ``holds``: of
      ``host.device_hold_ms`` and ``device_hold_busy_ms`` (the device thread's wake-up before a
      call); ``client``: of ``host.client_ms`` (the client's own part of a request's time).
    - ``spells``: ``host.speed_cv`` (how deep the host's slow spells are); ``others``:
      ``host.busy_cores`` (the CPU the rest of the host takes)."""
    h = scenario.host
    if what in ("spells", "others"):
        field = "speed_cv" if what == "spells" else "busy_cores"
        return replace(scenario, host=replace(h, **{field: getattr(h, field) * m}))
    if what in WAIT_TABLES:
        fields = {f: tuple((q, ms * m) for q, ms in getattr(h, f)) for f in WAIT_TABLES[what]}
        return replace(scenario, host=replace(h, **fields))
    services = scenario.services
    chosen = [not only or s.name in only for s in services]
    if what in ("calls", "host"):
        dearer = at_hour(scenario, m).services
        services = tuple(d if c else s for s, d, c in zip(services, dearer, chosen, strict=True))
    if what in ("phases", "host"):
        services = tuple(
            replace(
                s,
                pre=replace(s.pre, mean_ms=s.pre.mean_ms * m),
                post=replace(s.post, mean_ms=s.post.mean_ms * m),
            )
            if c
            else s
            for s, c in zip(services, chosen, strict=True)
        )
    return replace(scenario, services=services)


def run_all(
    scenario_path: Path,
    windows: int,
    grids_used: list[Path],
    what: str,
    ms: tuple[float, ...],
    only: frozenset[str],
) -> dict:
    """Every grid's lab figures, hour speeds and simulated figures at every multiplier."""
    base = Scenario.load(scenario_path)
    grids = {}
    for grid in grids_used:
        runs = load_runs(grid)
        window_s = statistics.median(r["measure_s"] for r in runs)
        lightest = hour_speed([grid], REFERENCE)
        every = hour_speed([grid], REFERENCE, "all")
        sims = {
            f"{m:.2f}": simulated(scaled(at_hour(base, lightest), m, what, only), window_s, windows)
            for m in ms
        }
        grids[grid.name] = {
            "lab": lab(runs),
            "hour_lightest": lightest,
            "hour_all": every,
            "sim": sims,
        }
        print(f"{grid.name}: hour x{lightest:.3f} (every level x{every:.3f})", flush=True)
    return {
        "scenario": str(scenario_path),
        "windows": windows,
        "scaled": what + (f" of {', '.join(sorted(only))}" if only else ""),
        "multipliers": list(ms),
        "grids": grids,
    }


def fmt_m(m: float, ms: tuple[float, ...]) -> str:
    """A closing multiplier as printed (``ms``: the multipliers simulated)."""
    if m == 0.0:
        return f"< {ms[0]:.2f}"
    if math.isinf(m):
        return f"> {ms[-1]:.2f}"
    return f"{m:.3f}"


def fmt_cost(c: float) -> str:
    """A 15 % cost as printed: ``any`` where the figure does not move, ``> 100 %`` past it."""
    if math.isinf(c):
        return "any"
    return "> 100 %" if c > 1 else f"{c:.1%}"


def tables(data: dict) -> str:
    """The module docs' two tables."""
    ms = tuple(data.get("multipliers", MULTIPLIERS))
    rows: dict[tuple[str, float, str], dict[str, list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for grid in data["grids"].values():
        labf = grid["lab"]
        for name, measured in labf.items():
            variant, rate_s, figure = name.split("|")
            rate = float(rate_s)
            if figure == "goodput_share" or rate not in RATES:
                continue
            if labf[key(variant, rate, "goodput_share")] < KNEE or measured <= 0:
                continue
            by_m = {m: grid["sim"][f"{m:.2f}"].get(name) for m in ms}
            if any(v is None for v in by_m.values()):
                continue
            row = rows[(variant, rate, figure)]
            row["error"].append(by_m[1.0] / measured - 1)
            e = elasticity(by_m)
            row["elasticity"].append(e)
            row["cost15"].append(math.log(1 + TARGET) / abs(e) if e else math.inf)
            row["closing"].append(closing(by_m, measured))
    scenario = Path(data["scenario"]).name
    out = [
        f"{scenario} scaled to each grid's hour, then its {data.get('scaled', 'calls')} x m for m "
        f"in {', '.join(f'{m:g}' for m in ms)}; {data['windows']} windows per level",
        "",
        "| variant | offered/s | figure | grids below the knee | sim / lab - 1 at m = 1 "
        "| elasticity E | cost error moving it 15 % | closing multiplier |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for (variant, rate, figure), row in sorted(rows.items()):
        cost15 = statistics.median(row["cost15"])
        out.append(
            f"| {variant} | {rate:g} | {figure} | {len(row['error'])} "
            f"| {statistics.median(row['error']):+.0%} "
            f"| {statistics.median(row['elasticity']):+.2f} "
            f"| {fmt_cost(cost15)} | {fmt_m(statistics.median_low(row['closing']), ms)} |"
        )
    out += ["", "| grid | hour's speed, lightest level | every level | every / lightest |"]
    out.append("|---|---:|---:|---:|")
    for name, grid in data["grids"].items():
        lo, al = grid["hour_lightest"], grid["hour_all"]
        out.append(f"| {name} | {lo:.3f} | {al:.3f} | {al / lo:.3f} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", type=Path, default=SCENARIO)
    ap.add_argument("--json", type=Path, default=None, help="write the raw figures here")
    ap.add_argument("--from", dest="source", type=Path, default=None, help="read them instead")
    ap.add_argument("--markdown", type=Path, default=None)
    ap.add_argument("--windows", type=int, default=WINDOWS, help=f"default {WINDOWS}")
    ap.add_argument(
        "--scale",
        choices=SCALES,
        default="calls",
        help="what m multiplies (default calls; scaled()'s docs)",
    )
    ap.add_argument(
        "--multipliers",
        default=",".join(f"{m:g}" for m in MULTIPLIERS),
        help="comma-separated, 1 among them and one on each side of it (default %(default)s)",
    )
    ap.add_argument(
        "--only", default="", help="with calls, phases or host: these services alone (a,b)"
    )
    ap.add_argument("--grids", type=int, default=len(GRIDS), help="the first N grids only")
    args = ap.parse_args(argv)
    if args.source is not None:
        if not args.source.is_file():
            ap.error(f"--from {args.source}: no such file (sensitivity.py --json writes one)")
        data = json.loads(args.source.read_text())
    else:
        try:
            ms = tuple(sorted(float(x) for x in args.multipliers.split(",")))
        except ValueError:
            ap.error(f"--multipliers {args.multipliers!r}: not comma-separated numbers")
        if 1.0 not in ms or ms[0] >= 1.0 or ms[-1] <= 1.0 or ms[0] <= 0:
            ap.error(f"--multipliers {args.multipliers!r}: needs 1, one above and one in (0, 1)")
        only = frozenset(x for x in args.only.split(",") if x)
        names = {s.name for s in Scenario.load(args.scenario).services}
        if only - names or (only and args.scale not in ("calls", "phases", "host")):
            ap.error(f"--only {args.only!r}: services of {sorted(names)}, with calls/phases/host")
        data = run_all(args.scenario, args.windows, GRIDS[: args.grids], args.scale, ms, only)
        if args.json is not None:
            tmp = args.json.with_suffix(".tmp")
            tmp.write_text(json.dumps(data, separators=(",", ":")) + "\n")
            tmp.replace(args.json)
    text = tables(data)
    print(text)
    if args.markdown is not None:
        args.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
