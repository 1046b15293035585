"""How much of the lab's run-to-run spread each of replay.py's forms explains (round 25).

Reads replay.py's markdown (one or more files, one per grid) and, per form of the simulation:

- **levels**: the (variant, rate) levels whose mean simulated p99 is within 15 % of the lab's
  mean (replay.py's per-level table, recomputed here from the runs);
- **run by run**: the correlation between the lab's and the simulator's log p99 over the runs,
  each level's mean log taken out first (so that only how a run differs from its level's other
  runs counts), and the share of that spread the form explains (1 - the residual's variance
  over the lab's, with the residual the lab's log less the simulator's, both demeaned);
- **runaway runs**: the runs whose lab p99 is at least twice their level's median run (the
  twenty-third round's rule), and for each form their simulated p99 over the same level's
  median simulated run: how far a form runs them away too.

Run:  python docs/results/calibration/round25/explained.py REPLAY.md [REPLAY.md ...]
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

RUNAWAY = 2.0
"""A run whose lab p99 is this many times its level's median run runs away."""


def rows(path: Path) -> tuple[list[str], list[tuple[str, float, float, list[float]]]]:
    """replay.py's forms and its per-run rows: (run id, rate, lab p99, each form's p99)."""
    forms: list[str] = []
    out = []
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "run":
            forms = [c.removeprefix("sim ").removesuffix(" ms") for c in cells[4:]]
        elif forms and len(cells) == 4 + len(forms) and "/" in cells[0]:
            run, rate, _, lab, *sims = cells
            out.append(
                (f"{path.parent.name}:{run}", float(rate), float(lab), [float(s) for s in sims])
            )
        elif line.startswith("Per level"):
            break
    return forms, out


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.split("Run:")[1].strip(), file=sys.stderr)
        return 2
    forms: list[str] = []
    runs = []
    for name in argv:
        f, r = rows(Path(name))
        if forms and f != forms:
            sys.exit(f"{name}: forms {f} differ from {forms}")
        forms = f
        runs += [(Path(name).stem, *x) for x in r]
    levels: dict[tuple[str, str, float], list] = {}
    for source, run, rate, lab, sims in runs:
        variant = run.split(":")[1].split("/")[0]
        levels.setdefault((source, variant, rate), []).append((run, lab, sims))
    print(f"{len(runs)} runs in {len(levels)} levels ({', '.join(argv)})\n")
    print(
        "| form | levels within 15 % | run by run: correlation | spread explained | "
        "runaway runs: simulated over the level's median run (median, max) |"
    )
    print("|---|---:|---:|---:|---|")
    for i, form in enumerate(forms):
        within, xs, ys, away = 0, [], [], []
        for got in levels.values():
            lab_mean = statistics.fmean(lab for _, lab, _ in got)
            sim_mean = statistics.fmean(s[i] for _, _, s in got)
            within += abs(sim_mean - lab_mean) <= 0.15 * lab_mean
            if len(got) < 2:
                continue
            ll = [math.log(lab) for _, lab, _ in got]
            ss = [math.log(s[i]) for _, _, s in got]
            ml, ms = statistics.fmean(ll), statistics.fmean(ss)
            xs += [x - ml for x in ll]
            ys += [y - ms for y in ss]
            lab_median = statistics.median(lab for _, lab, _ in got)
            sim_median = statistics.median(s[i] for _, _, s in got)
            away += [s[i] / sim_median for _, lab, s in got if lab >= RUNAWAY * lab_median]
        r = statistics.correlation(xs, ys) if len(xs) > 2 else float("nan")
        lab_var = statistics.fmean(x * x for x in xs)
        resid = statistics.fmean((x - y) ** 2 for x, y in zip(xs, ys, strict=True))
        share = 1 - resid / lab_var if lab_var else float("nan")
        runaway = (
            f"{len(away)} runs: {statistics.median(away):.2f}, {max(away):.2f}" if away else "none"
        )
        print(f"| {form} | {within} of {len(levels)} | {r:+.2f} | {share:+.2f} | {runaway} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
