"""The bursts table of sim.md's "On CPU devices": per level, each model's p99 against
``independent``'s at the same level, the worst of them, the overall p50 and the goodput (means
over repeats, read from a ``lanes bench run`` summary.json).

    python docs/results/usage-shares-lab/table.py docs/results/usage-shares-lab/bursts/summary.json
"""

from __future__ import annotations

import json
import sys
from typing import Any

MODELS = ("char_cnn", "line_rnn_zh", "line_rnn_en")
X = "\N{MULTIPLICATION SIGN}"


def level(variants: dict[str, Any], name: str, i: int) -> tuple[dict[str, float], float, float]:
    """Per-model p99, overall p50 and goodput of ``name``'s ``i``-th level."""
    lv = variants[name]["levels"][i]
    p99 = {m: float(d["p99_ms"]) for m, d in lv["models"].items()}
    return p99, float(lv["latency_ms"]["p50"]), float(lv["goodput_rps"])


def main(path: str) -> None:
    with open(path) as f:
        variants = json.load(f)["variants"]
    heads = [f"{m} p99 ms ({X} indep.)" for m in MODELS]
    heads += [f"worst {X} indep.", f"overall p50 ms ({X} indep.)", f"goodput/s ({X} indep.)"]
    print("| variant | offered/s | " + " | ".join(heads) + " |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in variants:
        for i, lv in enumerate(variants[name]["levels"]):
            ind, ind_p50, ind_good = level(variants, "independent", i)
            p99, p50, good = level(variants, name, i)
            ratio = {m: p99[m] / ind[m] for m in p99}
            cells = " | ".join(f"{p99[m]:.0f} ({ratio[m]:.2f})" for m in MODELS)
            label = f"`{name}`" if i == 0 else ""
            print(
                f"| {label} | {lv['offered_rps']:.0f} | {cells} | **{max(ratio.values()):.2f}** "
                f"| {p50:.1f} ({p50 / ind_p50:.2f}) | {good:.0f} ({good / ind_good:.2f}) |"
            )


if __name__ == "__main__":
    main(sys.argv[1])
