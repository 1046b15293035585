"""Does host_moved.py's verdict on a grid's lowest level tell whether the file predicts the rest
of the grid? The twenty-eighth round's check of its rule, on committed grids only.

For two files — the 2026-11-29 file (round26/scenarios/committed.toml, read off round 21's
seed-1 grid) and the 2026-12-02 file (round27/scenarios/seed157-reading.toml, read off round
27's seed-157 grid, the committed cpu-2core.toml) — and each grid they were judged on, grid by
grid and scaled to the grid's hour (the markdown tables listed in :data:`TABLES`):

- the verdict: host_moved.judge on the grid's lowest level (simulated afresh here);
- the truth: the share of the *other* levels' figures up to the knee (p50, p99 and goodput of
  every variant at the levels whose measured goodput is at least 90 % of the offer) that the
  committed table puts within 15 % (its errors as printed, rounded to a whole per cent).

The file "predicts the grid" when that share is at least TRUTH (60 %). Counted: pairs where the
verdict (holds or moved) matches the truth; and beside it, the rules not taken, each the same
verdict read another way: a figure inside the lab's 95 % interval of its mean counts as met
(``ci``); the runs a neighbour disturbed left out (``undisturbed``); the host keys' mean
log-ratio against the reference's within ±KEYS_TOLERANCE (``keys``). A grid judged twice (round
26's and round 27's tables of the 2026-11-29 file on grids 149 and 151) counts once. Round 28's
grids (seeds 179, 181 and 191) were run after the rule was chosen.

Run, from the repository root:
  PYTHONPATH=bench/calibrate .venv/bin/python docs/results/calibration/round28/validate.py
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import asdict
from pathlib import Path

import host_moved
from against_demo import GRID_AS_SIMULATED
from compare import TARGET, load_runs, undisturbed
from hour_speed import at_hour, hour_speed

from lanes.sim.scenario import Scenario

C = Path(__file__).resolve().parents[1]
FILES = {
    "2026-11-29": (C / "round26/scenarios/committed.toml", C / "round21/grid-seed1"),
    "2026-12-02": (C / "round27/scenarios/seed157-reading.toml", C / "round27/grid-seed157"),
}
TABLES = {
    "2026-11-29": [
        *sorted((C / "round26/out/grids").glob("committed-hour-on-grid-seed*.md")),
        *sorted((C / "round27/out/grids").glob("committed-hour-on-grid-seed*.md")),
        *sorted((C / "round27/out").glob("r27b-old-hour-on-grid-seed*.md")),
        *sorted((C / "round28/out").glob("old-hour-on-grid-seed*.md")),
    ],
    "2026-12-02": [
        *sorted((C / "round27/out/grids").glob("seed157-reading-hour-on-grid-seed*.md")),
        *sorted((C / "round27/out").glob("r27b-new-hour-on-grid-seed*.md")),
        *sorted((C / "round28/out").glob("new-hour-on-grid-seed*.md")),
    ],
}
ROUNDS = {
    "22": ("round22", (23, 37, 53, 71, 89)),
    "23": ("round23", (101, 103, 107)),
    "24": ("round24", (109, 113)),
    "25": ("round25", (127, 131)),
    "26": ("round26", (137, 139)),
    "26b": ("round26", (149, 151)),
    "27": ("round27", (157, 163)),
    "27b": ("round27", (167, 173)),
    "28": ("round28", (179, 181)),
}
"""Each round's grids of one hour, which the pooled tables pool."""
POOLED = {
    "2026-11-29": {
        **{r: C / f"round26/out/committed-hour-r{r}-pooled.md" for r in ROUNDS if r < "27"},
        "27": C / "round27/out/committed-hour-r27-pooled.md",
        "27b": C / "round27/out/r27b-old-hour-pooled.md",
        "28": C / "round28/out/old-hour-pooled.md",
    },
    "2026-12-02": {
        **{r: C / f"round27/out/seed157-reading-hour-r{r}-pooled.md" for r in ROUNDS if r < "27b"},
        "27b": C / "round27/out/r27b-new-hour-pooled.md",
        "28": C / "round28/out/new-hour-pooled.md",
    },
}
"""Per file, each round's table of the file on the round's grids pooled, scaled to the hour."""
TRUTH = 0.60
KEYS_TOLERANCE = 0.15
WINDOWS = 100


def grid_of(table: Path) -> Path:
    """The committed grid a table was judged on (its name ends in ``grid-seedN``)."""
    seed = table.stem.split("grid-seed")[1]
    (grid,) = C.glob(f"round2*/grid-seed{seed}")
    return grid


def read_another_way(grid: Path, scenario: Scenario, reference: Path) -> tuple[bool, bool]:
    """The verdict with the lab's 95 % interval counted as met, and without the disturbed runs."""
    runs = host_moved.lowest([r for r in load_runs(grid) if r["variant"] in GRID_AS_SIMULATED])
    at_hour_ = at_hour(scenario, hour_speed([grid], reference))
    out = []
    for kept, ci in ((runs, True), (undisturbed(runs)[0], False)):
        meas, pred = host_moved.at_level(kept, at_hour_, WINDOWS)
        met = figures = 0
        for m, p in ((meas[k], pred[k]) for k in meas):
            for name in host_moved.FIGURES:
                figures += 1
                near = abs(p[name] - m[name]) <= TARGET * m[name]
                met += near or (ci and m[name + "_ci_lo"] <= p[name] <= m[name + "_ci_hi"])
        out.append(met >= host_moved.HOLDS * figures)
    return out[0], out[1]


def rest_met(table: Path) -> float:
    """The share of the table's figures up to the knee, above its lowest level, within 15 %."""
    text = table.read_text()
    below = {
        m[1]: {float(x) for x in m[2].split(",")}
        for m in re.finditer(r"^- (\w+) \(([\d, ]+) req/s\)", text, re.M)
    }
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if (
            len(cells) > 8
            and cells[1] in below
            and cells[2].isdigit()
            and float(cells[2]) in below[cells[1]]
        ):
            rows.append((float(cells[2]), [float(cells[i].rstrip(" %")) for i in (4, 6, 8)]))
    lowest = min(rate for rate, _ in rows)
    errors = [abs(e) for rate, errs in rows if rate != lowest for e in errs]
    return sum(e <= 15 for e in errors) / len(errors)


def keys_rule(grid: Path, reference: Path) -> bool:
    """The host keys' rule: their mean log-ratio against the reference's within the tolerance."""
    here = asdict(host_moved.host_keys([grid]))
    there = asdict(host_moved.host_keys([reference]))
    ratios = [math.log(here[k] / there[k]) for k in here]
    return abs(statistics.fmean(ratios)) <= KEYS_TOLERANCE


def main() -> int:
    rows = []
    right = dict.fromkeys(("verdict", "ci", "undisturbed", "keys"), 0)
    late = dict.fromkeys(right, 0)
    fresh = 0
    word = {True: "holds", False: "moved"}
    for day, tables in TABLES.items():
        scenario_path, reference = FILES[day]
        scenario = Scenario.load(scenario_path)
        judged = {
            grid_of(t) if "round28" not in str(t) else C / "round28" / t.stem[-12:]: t
            for t in tables
        }
        for grid, table in sorted(judged.items(), key=lambda gt: int(gt[0].name[9:])):
            verdict, _ = host_moved.judge([grid], scenario, reference, WINDOWS)
            share = rest_met(table)
            truth = share >= TRUTH
            ci, quiet = read_another_way(grid, scenario, reference)
            got = {
                "verdict": verdict.holds,
                "ci": ci,
                "undisturbed": quiet,
                "keys": keys_rule(grid, reference),
            }
            fresh += grid.parent.name == "round28"
            for name, holds in got.items():
                right[name] += holds == truth
                late[name] += holds == truth and grid.parent.name == "round28"
            rows.append(
                f"| {day} | {grid.parent.name}/{grid.name} | {verdict.met}/{verdict.figures} "
                f"| {word[verdict.holds]} | {share:.2f} | {'yes' if truth else 'no'} | "
                + " | ".join(word[got[k]] for k in ("ci", "undisturbed", "keys"))
                + " |"
            )
    print(
        "| file | grid | lowest level within 15 % | verdict | rest within 15 % "
        f"| file predicts the rest (>= {TRUTH:.0%}) | ci | undisturbed | keys |"
    )
    print("|---|---|---:|---|---:|---|---|---|---|")
    print("\n".join(rows))
    print()
    for name, n in right.items():
        print(f"- {name}: matches in {n} of {len(rows)} (round 28's: {late[name]} of {fresh})")
    pooled()
    return 0


def pooled() -> None:
    """The verdict on each round's grids pooled (host_moved.py given them all), against the
    share of the rest of the round's pooled table within 15 %."""
    print(
        "\n| file | round's grids pooled | lowest level within 15 % | verdict "
        f"| rest within 15 % | file predicts the rest (>= {TRUTH:.0%}) |"
    )
    print("|---|---|---:|---|---:|---|")
    right = total = 0
    for day, tables in POOLED.items():
        scenario_path, reference = FILES[day]
        scenario = Scenario.load(scenario_path)
        for name, table in tables.items():
            folder, seeds = ROUNDS[name]
            grids = [C / folder / f"grid-seed{seed}" for seed in seeds]
            verdict, _ = host_moved.judge(grids, scenario, reference, WINDOWS)
            share = rest_met(table)
            truth = share >= TRUTH
            right += verdict.holds == truth
            total += 1
            print(
                f"| {day} | {name} ({', '.join(map(str, seeds))}) | {verdict.met}/{verdict.figures}"
                f" | {'holds' if verdict.holds else 'moved'} | {share:.2f} "
                f"| {'yes' if truth else 'no'} |"
            )
    print(f"\n- pooled: matches in {right} of {total}")


if __name__ == "__main__":
    raise SystemExit(main())
