"""The lab's headline: capacity at SLO and goodput, each variant against the baseline.

:func:`headline` turns a summary (:mod:`lanes.lab.aggregate`) into one row of text cells per
variant, which ``lanes demo`` prints and the report shows:

- the searched capacity at SLO (``capacity_search.capacity``: the mean over repeats of the
  highest load each repeat measured to meet the SLO) with its 95 % interval over repeats;
- its resolution: ``+R`` where the boundary lies below ``capacity + R`` (``high``), with the
  bisection steps asked for; ``every load met`` when every repeat met the highest load
  measured; where only some did, the other repeats' mean bracket and how many met every load
  (``+25 rps; 1 of 3 met every load``); ``below the grid`` when no load met the SLO in some
  repeat;
- its ratio to the baseline's, repeat by repeat, with its 95 % interval
  (:func:`lanes.lab.aggregate.paired_ratio`);
- the capacity at which every model meets the SLO;
- the goodput ratio to the baseline at the highest grid levels (:data:`TOP_LEVELS`), with its
  interval; where the baseline collapsed in any repeat — its goodput under :data:`COLLAPSED` of
  the offered load, 0 included — the two mean goodputs ``"250 rps vs 0.2"``: a ratio to almost
  nothing (``1001x``, or a mean of per-repeat ratios with one such repeat: ``441x [0.00,
  2334]``) says nothing a reader can use.

A missing figure is :data:`NONE`.

:func:`leaders` adds one line under the table: which variants lead on capacity. The rule: the
variant with the highest mean searched capacity leads, and so does every variant whose 95 %
interval reaches that leader's (the data cannot order them); a capacity with no interval (one
repeat, or the same in every repeat) is its own interval. Where several lead, each one's p99 at
the highest grid level is named beside it, the figure that still tells them apart. A variant
that met every load in every repeat has a capacity of at least the top level, so such ties at
the top of the grid are said as such. Variants are named highest capacity first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lanes.lab import aggregate as agg

TOP_LEVELS = 2
"""How many of the highest grid levels get a goodput ratio."""
COLLAPSED = 0.01
"""A baseline goodput below this share of the offered load is shown as a figure, not divided by."""
NONE = "-"
TIMES = "\N{MULTIPLICATION SIGN}"


@dataclass(frozen=True)
class Headline:
    """The headline table: ``columns`` and one row of text per variant (the name first)."""

    columns: list[str]
    rows: list[list[str]]
    baseline: str
    steps: int


def headline(summary: Mapping[str, Any]) -> Headline:
    """The headline of ``summary`` (see the module doc)."""
    base = str(summary["baseline"])
    ratios = agg.ratios(summary, base)["variants"]
    labels = _labels(summary["variants"][base])
    base_levels = {lv["level"]: lv for lv in summary["variants"][base]["levels"]}
    top = sorted(labels)[-TOP_LEVELS:]
    steps = max(int(v["capacity_search"]["steps"]) for v in summary["variants"].values())
    columns = [
        "variant",
        "capacity [95 % CI]",
        "resolution",
        f"vs {base}",
        "every model",
        *(f"goodput vs {base} at {labels[i]}" for i in top),
    ]
    rows = []
    for name, variant in summary["variants"].items():
        unit = " rps" if variant.get("capacity_unit", "rps") == "rps" else ""
        search = variant.get("capacity_search") or {}
        every = variant.get("every_model_capacity") or {}
        pairs = zip(variant["levels"], ratios[name]["goodput"], strict=True)
        against = base_levels if name != base else {}  # the baseline's own row: its ratio
        goodput = {lv["level"]: _goodput(lv, g, against.get(lv["level"])) for lv, g in pairs}
        rows.append(
            [
                name,
                _with_ci(search.get("capacity"), search.get("capacity_ci"), unit),
                resolution(search, unit),
                _ratio(ratios[name].get("capacity_search")),
                _capacity(every, unit),
                *(goodput.get(i, NONE) for i in top),
            ]
        )
    return Headline(columns, rows, base, steps)


def resolution(block: Mapping[str, Any], unit: str = "") -> str:
    """``+R unit`` (the boundary lies below ``capacity + R``), or why there is no bound."""
    if block.get("capacity") is None:
        repeats = block.get("repeats") or []
        return "below the grid" if repeats else NONE
    if block.get("resolution") is not None:
        return f"+{number(block['resolution'])}{unit}"
    repeats = block.get("repeats") or []
    bounded = [r for r in repeats if r.get("high") is not None and r.get("low") is not None]
    if not bounded or len(bounded) == len(repeats):
        return "every load met"
    # Some repeats met every load, others bisected below the top: the bisected ones' bracket.
    width = sum(float(r["high"]) - float(r["low"]) for r in bounded) / len(bounded)
    met = len(repeats) - len(bounded)
    return f"+{number(width)}{unit}; {met} of {len(repeats)} met every load"


def number(value: float | None, none: str = NONE) -> str:
    """A figure with about three significant digits; ``none`` for None."""
    if value is None:
        return none
    v = float(value)
    if v == int(v) and abs(v) < 1e6:
        return f"{int(v)}"
    if abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def _capacity(block: Mapping[str, Any], unit: str) -> str:
    if block.get("capacity") is None:
        return resolution(block)
    return f"{number(block['capacity'])}{unit} ({resolution(block, unit)})"


def _goodput(
    level: Mapping[str, Any], paired: Mapping[str, Any] | None, base: Mapping[str, Any] | None
) -> str:
    """The paired goodput ratio; where the baseline collapsed in any repeat (module doc), both
    mean goodputs."""
    if base is None or base.get("goodput_rps") is None:
        return _ratio(paired)
    offered = level.get("offered_rps")
    floor = COLLAPSED * offered if offered else 0.0
    repeats = [float(g) for g in (base.get("goodput_rps_by_repeat") or {}).values()]
    repeats = repeats or [float(base["goodput_rps"])]
    collapsed = any(g == 0 or g < floor for g in repeats)
    if collapsed and level.get("goodput_rps") is not None:
        return f"{number(level['goodput_rps'])} rps vs {number(base['goodput_rps'])}"
    return _ratio(paired)


def _with_ci(value: float | None, ci: list[float] | None, unit: str) -> str:
    if value is None:
        return NONE
    if ci is None or ci[0] == ci[1]:
        return f"{number(value)}{unit}"
    return f"{number(value)}{unit} [{number(ci[0])}, {number(ci[1])}]"


def _ratio(paired: Mapping[str, Any] | None) -> str:
    if paired is None:
        return NONE
    lo, hi = paired["ratio_ci"]
    text = f"{paired['ratio']:.2f}{TIMES}"
    return text if lo == hi else f"{text} [{lo:.2f}, {hi:.2f}]"


def _labels(variant: Mapping[str, Any]) -> dict[int, str]:
    out = {}
    for lv in variant["levels"]:
        if lv["offered_rps"] is not None:
            out[lv["level"]] = f"{number(lv['offered_rps'])} rps"
        else:
            out[lv["level"]] = f"c={lv['concurrency']}"
    return out


def model_rows(summary: Mapping[str, Any]) -> list[list[str]]:
    """One row per variant and model: ``[variant, model, capacity [95 % CI], resolution]``
    (``per_model_capacity``)."""
    rows = []
    for name, variant in summary["variants"].items():
        unit = " rps" if variant.get("capacity_unit", "rps") == "rps" else ""
        for model, block in (variant.get("per_model_capacity") or {}).items():
            rows.append(
                [
                    name,
                    model,
                    _with_ci(block.get("capacity"), block.get("capacity_ci"), unit),
                    resolution(block, unit),
                ]
            )
    return rows


def leaders(summary: Mapping[str, Any]) -> str | None:
    """The line naming the variants that lead on capacity (see the module doc), highest first;
    None when no variant has a searched capacity."""
    spans: dict[str, tuple[float, float, float]] = {}
    for name, variant in summary["variants"].items():
        search = variant.get("capacity_search") or {}
        cap = search.get("capacity")
        if cap is None:
            continue
        lo, hi = search.get("capacity_ci") or (cap, cap)
        spans[name] = (float(cap), float(lo), float(hi))
    if not spans:
        return None
    order = sorted(spans, key=lambda n: -spans[n][0])
    best = order[0]
    ahead = [n for n in order if spans[n][2] >= spans[best][1]]

    def named(name: str) -> str:
        unit = summary["variants"][name].get("capacity_unit", "rps")
        return f"{name} ({number(spans[name][0])}{' rps' if unit == 'rps' else ''})"

    if len(ahead) == 1:
        return (
            f"highest capacity at SLO: {named(best)}; every other variant's interval lies below it"
        )
    variants = summary["variants"]
    top = {n: max(variants[n]["levels"], key=lambda lv: lv["level"]) for n in ahead}
    p99s = ", ".join(f"{n} {number((top[n].get('latency_ms') or {}).get('p99'))} ms" for n in ahead)
    label = _labels(variants[best]).get(top[best]["level"], "the top level")
    every = all(
        r.get("high") is None
        for n in ahead
        for r in (variants[n].get("capacity_search") or {}).get("repeats") or [{"high": 0}]
    )
    why = "each met every load in every repeat" if every else "their 95 % intervals overlap"
    others = ", ".join(named(n) for n in ahead[1:])
    return (
        f"highest capacity at SLO: {named(best)}, not separated from {others} ({why}); "
        f"p99 at {label}: {p99s}"
    )
