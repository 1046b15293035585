"""The isolation tables of sim.md's "On CPU devices, three repeats": per level, each model's
p99 against the baseline's at the same level (default ``independent``), the worst of them, and
the mean and goodput against a reference's (default ``sjf``, else the baseline), means over
repeats, from a ``lanes bench run`` summary.json.

    python docs/results/isolation/run4/table.py docs/results/isolation/run4/summary.json
    python docs/results/isolation/run4/table.py docs/results/isolation/run6/summary.json \
        independent-cpu2
"""

from __future__ import annotations

import json
import sys
from typing import Any

MODELS = ("char_cnn", "line_rnn_zh", "line_rnn_en")
X = "\N{MULTIPLICATION SIGN}"


def main(path: str, baseline: str = "independent", reference: str | None = None) -> None:
    with open(path, encoding="utf-8") as f:
        variants: dict[str, Any] = json.load(f)["variants"]
    ref = reference or ("sjf" if "sjf" in variants else baseline)
    short = "indep." if baseline == "independent" else baseline
    heads = [f"{m} p99 ms ({X} {short})" for m in MODELS]
    heads += [f"worst {X} {short}", f"mean ms ({X} {ref})", f"goodput/s ({X} {ref})"]
    print("| variant | offered/s | " + " | ".join(heads) + " |")
    print("|---|---:|" + "---:|" * len(heads))
    for name, variant in variants.items():
        for i, lv in enumerate(variant["levels"]):
            ind = variants[baseline]["levels"][i]
            sjf = variants[ref]["levels"][i]
            ratio = {m: lv["models"][m]["p99_ms"] / ind["models"][m]["p99_ms"] for m in MODELS}
            cells = [f"{lv['models'][m]['p99_ms']:.0f} ({ratio[m]:.2f})" for m in MODELS]
            mean, good = lv["latency_ms"]["mean"], lv["goodput_rps"]
            cells += [
                f"**{max(ratio.values()):.2f}**",
                f"{mean:.1f} ({mean / sjf['latency_ms']['mean']:.2f})",
                f"{good:.0f} ({good / sjf['goodput_rps']:.2f})",
            ]
            label = f"`{name}`" if i == 0 else ""
            print(f"| {label} | {lv['offered_rps']:.0f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(*sys.argv[1:4])
