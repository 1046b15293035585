"""The base scenario compare.py calibrates: a scenario file with each service's measure.py
figures replaced by those of a merged measure.py JSON (``measure.py --merge``).

``pre`` = ``wire_decode`` + ``pre`` and ``post`` = ``post`` + ``encode`` (medians, the hook's
robust cv), ``gpu`` = the batch of one (median, robust cv), ``batch_ms`` = the other sizes'
medians — the native timer's figures only, as the first round's base was; compare.py then reads
the rest off a lab run (in-situ costs, holds, preemptions, the I/O threads' CPU on ``pre``, the
wake-up, busy cores). Every other line of the scenario file is kept as it is.

Run:  python bench/calibrate/base_scenario.py SCENARIO MERGED_JSON OUT
      (e.g. examples/scenarios/cpu-2core.toml docs/results/calibration/lab-today/native-merged.json)
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def base(scenario: str, merged: dict) -> str:
    """``scenario``'s text with each ``[[service]]``'s pre, post, gpu and batch_ms from
    ``merged``."""
    head, *blocks = scenario.split("[[service]]")
    out = [head]
    for block in blocks:
        name = re.search(r'name = "([^"]+)"', block).group(1)
        points = merged["batch_cost"][name]["points"]
        hooks = merged["prepost"][name]
        pre = hooks["pre"]["median_ms"] + hooks["wire_decode"]["median_ms"]
        post = hooks["post"]["median_ms"] + hooks["encode"]["median_ms"]
        one, *rest = points
        figures = {
            "pre": (pre, hooks["pre"]["robust_cv"]),
            "post": (post, hooks["post"]["robust_cv"]),
            "gpu": (one["median_ms"], one["robust_cv"]),
        }
        for key, (ms, cv) in figures.items():
            block = re.sub(
                rf"^{key} = \{{[^}}]*\}}",
                f"{key} = {{ mean_ms = {ms:.4g}, cv = {cv:.2f} }}",
                block,
                flags=re.M,
            )
        sizes = ", ".join(f"[{p['n']}, {p['median_ms']:.4g}]" for p in rest)
        block = re.sub(r"batch_ms = \[\[.*?\]\] \}", f"batch_ms = [{sizes}] }}", block)
        out.append(block)
    return "[[service]]".join(out)


def main(argv: list[str]) -> int:
    scenario, merged, out = (Path(a) for a in argv)
    out.write_text(base(scenario.read_text(), json.loads(merged.read_text())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
