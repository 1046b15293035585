"""The thirty-fourth round's trial files (docs/results/calibration.md, "The thirty-fourth round"):
the committed file with one part of how a crowded host (the runtimes outnumber the cores, as under
`independent` and the default) treats a call or a wake-up read another way, to ask whether that
part carries the short models' tails at 600-800 req/s.

- ``preempts``: the calls' preemptions (``host.call_preempt_per_ms``, ``host.call_preempt_ms``)
  read off grid 157's `independent` runs at 400 req/s instead of sched.py's `fifo`/`sjf` reading:
  compare.call_preemption's rule (timelines.py's ``preempted``: calls off their core beyond its
  bound, per ms of their CPU, and those calls' time off a core, each quantile the median over the
  runs). Absorbed as in the file, so a draw stands for all of a call's wait for its core. The
  rule applies to every call, so only the crowded variants' rows are this file's question.
- ``preempts-lag``: the same with the lag among calls (``lag_ms`` 1, ``lag_among_calls``) in
  place of ``call_stretch``: a call's first ms runs ahead of the others' rest, so the short calls
  run at once and the long ones take the wait, as the lab's do (offcore.py).
- ``wakes-crowded`` / ``wakes-lone``: the busy wake-ups' tables (``pre_wake_busy_ms``,
  ``post_wake_busy_ms``, read off grid 157 over all four variants) scaled, quantile by
  quantile, by the ratio of the crowded (`independent`, default) or the lone (`fifo`, `sjf`)
  variants' table to all four's on grid 201 (busy_wakes.py on each half of that grid; the tables
  in out/wakes-201-*.json). Again one table for every variant: the crowded file's question is
  `independent`'s and the default's rows, the lone file's `fifo`'s and `sjf`'s.

Run (from the repository root):
  PYTHONPATH=bench/calibrate python docs/results/calibration/round34/variants.py OUT_DIR
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from compare import load_runs, median_quantiles

ROOT = Path(__file__).resolve().parents[4]
FILE = ROOT / "examples/scenarios/cpu-2core.toml"
HERE = Path(__file__).resolve().parent
GRID = HERE.parent / "round27/grid-seed157"
RATE = 400.0
STRETCH = "call_stretch = [1.0, 1.25, 1.16, 1.0]"
WAKE_KEYS = ("pre_wake_busy_ms", "post_wake_busy_ms")


def independent_preempts(grid: Path, rate: float) -> tuple[float, list[list[float]]]:
    """compare.call_preemption's rule on the grid's `independent` runs at ``rate``."""
    timelines = json.loads((grid / "timelines.json").read_text())
    runs = [
        r
        for r in load_runs(grid)
        if r["variant"] == "independent" and r["offered"]["rate_rps"] == rate
    ]
    blocks = [timelines[r["id"]]["preempted"] for r in runs]
    per_ms = sum(b["preempted"] for b in blocks) / sum(b["cpu_ms"] for b in blocks)
    waits = median_quantiles([b["quantiles_ms"] for b in blocks])
    return round(per_ms, 4), [[p, round(x, 4)] for p, x in waits]


def set_key(text: str, key: str, value: str) -> str:
    """``text`` with the TOML line ``key = ...`` set to ``value`` (the key must be there)."""
    new, n = re.subn(rf"^{key} = .*$", f"{key} = {value}", text, count=1, flags=re.M)
    if n != 1:
        raise SystemExit(f"variants: {key} not in {FILE}")
    return new


def scaled_wakes(text: str, kind: str) -> str:
    """The busy wake tables times grid 201's (kind's table / all variants') per quantile."""
    every = json.loads((HERE / "out/wakes-201-all.json").read_text())
    part = json.loads((HERE / f"out/wakes-201-{kind}.json").read_text())
    for key in WAKE_KEYS:
        points = json.loads(re.search(rf"^{key} = (\[.*\])", text, re.M).group(1))
        a, k = dict(map(tuple, every[key])), dict(map(tuple, part[key]))
        new = [[p, round(x * k[p] / a[p], 4) if a.get(p) else x] for p, x in points]
        text = set_key(text, key, json.dumps(new))
    return text


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    base = FILE.read_text()
    per_ms, waits = independent_preempts(GRID, RATE)
    pre = set_key(base, "call_preempt_per_ms", str(per_ms))
    pre = set_key(pre, "call_preempt_ms", json.dumps(waits))
    if STRETCH not in pre:
        raise SystemExit(f"variants: {STRETCH!r} not in {FILE}")
    files = {
        "preempts": pre,
        "preempts-lag": pre.replace(STRETCH, "lag_ms = 1.0\nlag_among_calls = true"),
        "wakes-crowded": scaled_wakes(base, "crowded"),
        "wakes-lone": scaled_wakes(base, "lone"),
    }
    for name, text in files.items():
        head = f"# round34/variants.py's `{name}` (its docstring): the committed file, part anew\n"
        (out / f"{name}.toml").write_text(head + text)
        print(f"{out / name}.toml")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
