"""How well the lab predicts itself: each repeat of a lab grid set against the others' mean.

The rule is compare.py's with one repeat in the simulator's place. For each variant and offered
rate below the knee (the mean measured goodput at least ``KNEE`` of the offer), each repeat's
p50, p99 and goodput is *within* when it lies within ``TARGET`` of the mean of the *other*
repeats at that level (leave one out: ``|x - m| <= TARGET * m``). Counted as compare.py counts,
k of n per variant and figure, n = levels x repeats (a level with one repeat left has no others
and is not counted); and, beside the simulator's one prediction per level, the same counts as a
share of a repeat per level summed over the levels ("per level": comparable to compare.py's
"of 39").

Per level also: the repeats' spread (max ÷ min); the 95 % confidence interval of the mean
(``t`` with n - 1 degrees of freedom, the repeats' sample standard deviation) as ± % of the
mean; the repeats that would make that interval no wider than ± ``TARGET`` at the observed
coefficient of variation; and the chance that a perfect prediction (the level's true mean) is
within ``TARGET`` of the mean of this many repeats, the repeats' mean taken as normal with the
observed coefficient of variation ("a perfect model": a rough ceiling on compare.py's counts).

``--predicts GRID [GRID ...]`` (the twenty-second round): the lab in the simulator's place across
grids instead. The results' mean per variant and level (their repeats pooled) is the prediction
for the other grids' (pooled likewise), judged exactly as compare.py judges the simulator: the
same table and the same counts below the other grids' knee. Grids run back to back on fresh
arrival seeds tell what the leave-one-out count cannot: how far the lab reproduces itself when
the host's state and the arrivals both change, the ceiling a scenario read off one grid can
reach on another. ``--max-others`` drops runs on both sides.

``--without-disturbed`` (the twenty-third round) drops, on both sides, the runs the rest of the
host disturbed (``lanes.lab.host_noise``: the run files' ``other_cores`` at 0.1 or more, other
processes and steal with the server's and the lab's own CPU taken out, where ``--max-others``'s
reading counts the lab's generators too); the heading says how many.

Run:  python bench/calibrate/self_check.py RESULTS [RESULTS ...] [--max-others CORES]
      [--without-disturbed] [--markdown OUT.md]   (several folders: their repeats pooled)
      python bench/calibrate/self_check.py RESULTS [RESULTS ...] --predicts GRID [GRID ...]
"""

from __future__ import annotations

import argparse
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import compare
from compare import KNEE, TARGET, emit, load_runs, others_cores, undisturbed  # beside this file

from lanes.lab.aggregate import t_quantile_975

FIGURES = ("p50", "p99", "goodput")

MAX_REPEATS = 999
"""Where :func:`repeats_needed` stops looking."""


def within(x: float, m: float) -> bool:
    """compare.py's rule: ``x`` (the prediction) within ``TARGET`` of ``m`` (the measurement)."""
    return abs(x - m) <= TARGET * m


def leave_one_out(xs: list[float]) -> list[float]:
    """Each value's relative error against the mean of the others, ``(x - m) / m``."""
    if len(xs) < 2:
        return []
    total = math.fsum(xs)
    out = []
    for x in xs:
        m = (total - x) / (len(xs) - 1)
        out.append((x - m) / m)
    return out


def ci_pct(xs: list[float]) -> float:
    """The 95 % confidence interval's half-width of the mean of ``xs``, % of the mean."""
    if len(xs) < 2:
        return math.inf
    return (
        t_quantile_975(len(xs) - 1)
        * statistics.stdev(xs)
        / math.sqrt(len(xs))
        / statistics.mean(xs)
        * 100
    )


def repeats_needed(cv: float) -> int:
    """The fewest repeats whose mean's 95 % interval is within ± ``TARGET`` at coefficient of
    variation ``cv`` (``MAX_REPEATS + 1`` when more than ``MAX_REPEATS``)."""
    for n in range(2, MAX_REPEATS + 1):
        if t_quantile_975(n - 1) * cv / math.sqrt(n) <= TARGET:
            return n
    return MAX_REPEATS + 1


def perfect(cv: float, n: int) -> float:
    """The chance that the true mean is within ``TARGET`` of the mean of ``n`` repeats, that mean
    normal about the true one with coefficient of variation ``cv / sqrt(n)``."""
    if cv == 0:
        return 1.0
    se = cv / math.sqrt(n)
    nd = statistics.NormalDist()
    # |mu - xbar| <= TARGET * xbar  <=>  mu / (1 + TARGET) <= xbar <= mu / (1 - TARGET)
    return nd.cdf((1 / (1 - TARGET) - 1) / se) - nd.cdf((1 / (1 + TARGET) - 1) / se)


@dataclass(frozen=True)
class Cell:
    """One figure of one variant at one level, over its repeats."""

    xs: tuple[float, ...]

    @property
    def mean(self) -> float:
        return statistics.mean(self.xs)

    @property
    def cv(self) -> float:
        return statistics.stdev(self.xs) / self.mean if len(self.xs) > 1 else 0.0

    @property
    def errors(self) -> list[float]:
        return leave_one_out(list(self.xs))

    @property
    def hits(self) -> int:
        return sum(abs(e) <= TARGET for e in self.errors)

    @property
    def spread(self) -> float:
        return max(self.xs) / min(self.xs) if min(self.xs) > 0 else math.inf


Levels = dict[tuple[str, float], dict[str, Cell]]


def cells(runs: list[dict[str, Any]]) -> Levels:
    """(variant, offered rps) → figure → its values over the repeats, in the runs' order."""
    groups: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault((r["variant"], r["offered"]["rate_rps"]), []).append(r["load"])
    out: Levels = {}
    for key in sorted(groups):
        loads = groups[key]
        out[key] = {
            "p50": Cell(tuple(x["latency_ms"]["p50"] for x in loads)),
            "p99": Cell(tuple(x["latency_ms"]["p99"] for x in loads)),
            "goodput": Cell(tuple(x["goodput_rps"] for x in loads)),
        }
    return out


def below_knee(levels: Levels) -> Levels:
    """compare.py's knee rule: the levels whose mean measured goodput is at least ``KNEE`` of the
    offer."""
    return {k: v for k, v in levels.items() if v["goodput"].mean >= KNEE * k[1]}


def table(levels: Levels) -> str:
    """Per level: each figure's mean [range], spread, 95 % interval, repeats for ± ``TARGET``,
    and the repeats within ``TARGET`` of the others' mean."""
    head = (
        "| variant | offered/s | repeats | p50 ms mean [range] | max/min | 95 % CI | "
        f"p99 ms mean [range] | max/min | 95 % CI | p99: repeats for ±{TARGET:.0%} | "
        f"goodput/s mean | within {TARGET:.0%} of the others: p50 / p99 / goodput |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    rows = []
    for (variant, rate), c in levels.items():
        n = len(c["p99"].xs)
        parts = [f"| {variant} | {rate:.0f} | {n}"]
        for name in ("p50", "p99"):
            x = c[name]
            parts.append(
                f"{x.mean:.1f} [{min(x.xs):.1f}-{max(x.xs):.1f}] | {x.spread:.2f}x | "
                f"±{ci_pct(list(x.xs)):.0f} %"
            )
        need = repeats_needed(c["p99"].cv)
        parts.append(str(need) if need <= MAX_REPEATS else f">{MAX_REPEATS}")
        parts.append(f"{c['goodput'].mean:.0f}")
        parts.append(" / ".join(f"{c[name].hits}/{len(c[name].errors)}" for name in FIGURES))
        rows.append(" | ".join(parts) + " |")
    return head + "\n".join(rows) + "\n"


@dataclass(frozen=True)
class Count:
    """The leave-one-out counts of a set of cells (levels) of one figure."""

    cells: tuple[Cell, ...]

    @property
    def hits(self) -> int:
        """Repeats within ``TARGET`` of the others' mean."""
        return sum(c.hits for c in self.cells)

    @property
    def repeats(self) -> int:
        return sum(len(c.errors) for c in self.cells)

    @property
    def per_level(self) -> float:
        """The share of a level's repeats within, summed over the levels."""
        return math.fsum(c.hits / len(c.xs) for c in self.cells)

    @property
    def perfect(self) -> float:
        """A perfect model's expected count of levels within (:func:`perfect`)."""
        return math.fsum(perfect(c.cv, len(c.xs)) for c in self.cells)

    def line(self) -> str:
        n = len(self.cells)
        return (
            f"{self.hits}/{self.repeats} within {TARGET:.0%}; per level {self.per_level:.1f}/{n}; "
            f"a perfect model {self.perfect:.1f}/{n}"
        )


def summary(levels: Levels) -> str:
    """Per variant and figure, below the knee: the leave-one-out errors' range and
    :class:`Count`; then the same over every variant, and the repeats a 95 % interval of
    ± ``TARGET`` would take at the levels' median and root-mean-square coefficient of
    variation."""
    lines = [
        f"below the knee (mean measured goodput >= {KNEE:.0%} of the offer), each repeat against "
        "the mean of the others:"
    ]
    counted = {k: v for k, v in levels.items() if len(v["p99"].xs) > 1}
    for variant in sorted({k[0] for k in counted}):
        keys = [k for k in counted if k[0] == variant]
        parts = []
        for name in FIGURES:
            count = Count(tuple(counted[k][name] for k in keys))
            errs = [e * 100 for c in count.cells for e in c.errors]
            parts.append(f"{name} {min(errs):+.0f} to {max(errs):+.0f} % ({count.line()})")
        rates = ", ".join(f"{k[1]:.0f}" for k in keys)
        lines.append(f"- {variant} ({rates} req/s): " + "; ".join(parts))
    counts = [Count(tuple(c[name] for c in counted.values())) for name in FIGURES]
    lines.append(
        "- all: "
        + "; ".join(f"{name} {count.line()}" for name, count in zip(FIGURES, counts, strict=True))
        + f"; in all {sum(c.hits for c in counts)}/{sum(c.repeats for c in counts)} repeats, "
        f"per level {math.fsum(c.per_level for c in counts):.1f} of "
        f"{sum(len(c.cells) for c in counts)}, a perfect model "
        f"{math.fsum(c.perfect for c in counts):.1f}"
    )
    for name in ("p50", "p99"):
        cvs = [c[name].cv for c in counted.values()]
        med, rms = statistics.median(cvs), math.sqrt(statistics.fmean(x * x for x in cvs))
        lines.append(
            f"- {name}'s coefficient of variation over the repeats: median {med:.2f}, root mean "
            f"square {rms:.2f} over the {len(cvs)} levels; repeats for a 95 % interval of the "
            f"mean within ±{TARGET:.0%}: {repeats_needed(med)} at the median, "
            f"{repeats_needed(rms)} at the root mean square"
        )
    return "\n".join(lines) + "\n"


def across(
    results: list[Path],
    runs: list[dict[str, Any]],
    grids: list[Path],
    other: list[dict[str, Any]],
    out: Path | None,
    phrases: list[str] | None = None,
) -> int:
    """``--predicts``: the mean of ``runs`` (per variant and level) as compare.py's prediction
    for the mean of ``other`` (the runs of ``grids``), with its table (the predicted column
    headed so) and counts; a level ``other`` ran and ``runs`` did not is refused by name.
    ``phrases`` (``--without-disturbed``: what was dropped from each side) go in the heading."""
    pred = compare.measured(runs)
    meas = compare.measured(other)
    if missing := sorted(set(meas) - set(pred)):
        names = ", ".join(f"{v} at {rate:g} req/s" for v, rate in missing)
        raise SystemExit(f"self_check: {', '.join(map(str, results))} ran no {names}")
    head = (
        "the mean of "
        + ", ".join(map(str, results))
        + " as the prediction for "
        + ", ".join(map(str, grids))
    )
    if phrases:
        head += " (" + "; ".join(phrases) + ")"
    shown = {k: pred[k] for k in meas}
    table = compare.table(meas, shown).replace(" / sim |", " / predicted |", 3)
    return emit(f"{head}\n\n{table}\n{compare.summary(meas, shown)}", out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, nargs="+", help="lanes bench run results folders")
    ap.add_argument("--markdown", type=Path, help="also write the tables here")
    ap.add_argument("--max-others", type=float, help="drop runs whose other threads used more")
    ap.add_argument(
        "--predicts",
        type=Path,
        nargs="+",
        metavar="GRID",
        help="the results' means as the prediction for these grids' (compare.py's rule)",
    )
    ap.add_argument(
        "--without-disturbed",
        action="store_true",
        help="drop the runs the rest of the host disturbed (the run files' host noise)",
    )
    args = ap.parse_args(argv)
    phrases: list[str] = []

    def kept(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if args.max_others is not None:
            runs = [r for r in runs if others_cores(r) <= args.max_others]
        if args.without_disturbed:
            runs, phrase = undisturbed(runs)
            phrases.append(phrase)
        return runs

    runs = kept([r for d in args.results for r in load_runs(d)])
    if args.predicts:
        other = kept([r for g in args.predicts for r in load_runs(g)])
        return across(args.results, runs, args.predicts, other, args.markdown, phrases)
    levels = below_knee(cells(runs))
    head = "the repeats of " + ", ".join(str(d) for d in args.results)
    if args.max_others is not None:
        head += f", those whose other threads used at most {args.max_others:g} cores"
    if phrases:
        head += f", {phrases[0]}"
    return emit(f"{head}\n\n{table(levels)}\n{summary(levels)}", args.markdown)


if __name__ == "__main__":
    raise SystemExit(main())
