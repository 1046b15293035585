"""The nineteenth round's table of a results folder's runs (docs/results/calibration.md): per
variant and level, each repeat's p99 and `line_rnn_zh`'s, the server's window, the devices' busy
share over it and the host's idle share, with the median p99.

Run:  python windows.py RESULTS
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    results = Path(argv[0])
    cells: dict[tuple[str, float], list[dict]] = {}
    for path in sorted(results.glob("runs/*/L*-r*.json")):
        if path.name.endswith(".trace.json"):
            continue
        run = json.loads(path.read_text())
        cells.setdefault((run["variant"], run["offered"]["rate_rps"]), []).append(run)
    print("| variant | req/s | p99 ms (repeats) | median | zh p99 ms | window s | busy | idle |")
    print("|---|---:|---|---:|---|---|---|---|")
    for (variant, rate), runs in sorted(cells.items()):
        runs.sort(key=lambda r: r["repeat"])
        p99 = [r["load"]["latency_ms"]["p99"] for r in runs]
        zh = [r["load"]["models"]["line_rnn_zh"]["latency_ms"]["p99"] for r in runs]
        servers = [r["server"] for r in runs]
        busy = [
            statistics.fmean(d["busy_s"] for d in s["device"].values()) / s["window_s"]
            for s in servers
        ]
        cols = [
            " ".join(f"{x:.0f}" for x in p99),
            f"{statistics.median(p99):.0f}",
            " ".join(f"{x:.0f}" for x in zh),
            " ".join(f"{s['window_s']:.2f}" for s in servers),
            " ".join(f"{x:.2f}" for x in busy),
            " ".join(f"{s['host_cpu_idle']:.2f}" for s in servers),
        ]
        print(f"| {variant} | {rate:g} | " + " | ".join(cols) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
