"""Write a scenario with its runtime calls' costs scaled to an hour's speed (round 25).

Every service's ``gpu`` ``mean_ms`` and each ``batch_ms`` point of the scenario file times
FACTOR (the hour's calls against the scenario's, replay.py ``--speed-base scenario``'s speed at
the lightest levels), and optionally a speed process (``host.speed_cv``, ``host.speed_ms``)
added after ``call_stretch``; everything else, comments included, as it is.

Run:  python docs/results/calibration/round25/hour.py SCENARIO FACTOR OUT [CV MS]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def scaled(text: str, factor: float) -> str:
    def gpu(m: re.Match[str]) -> str:
        return f"{m.group(1)}{float(m.group(2)) * factor:.6g}"

    def points(m: re.Match[str]) -> str:
        pts = re.sub(
            r"\[(\d+), ([0-9.]+)\]",
            lambda p: f"[{p.group(1)}, {float(p.group(2)) * factor:.6g}]",
            m.group(2),
        )
        return m.group(1) + pts

    text = re.sub(r"(^gpu = \{[^}]*mean_ms = )([0-9.]+)", gpu, text, flags=re.M)
    return re.sub(r"(batch_ms = )(\[\[.*?\]\])", points, text)


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 5):
        print(__doc__.split("Run:")[1].strip(), file=sys.stderr)
        return 2
    text = scaled(Path(argv[0]).read_text(), float(argv[1]))
    if len(argv) == 5:
        text = re.sub(
            r"^call_stretch = .*$",
            lambda m: f"{m.group(0)}\nspeed_cv = {argv[3]}\nspeed_ms = {argv[4]}",
            text,
            count=1,
            flags=re.M,
        )
    Path(argv[2]).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
