"""The forty-first round's two scratch variants of the file: the hooks' CPU and the background.

Writes a copy of a scenario file with every service's ``pre`` and ``post`` mean scaled by
``HOOKS`` and ``host.busy_cores`` scaled by ``BUSY`` (a text edit of those lines; everything
else as it is), to try whether the fast hour of 2026-12-05 is the committed file's host with
the work outside the calls faster (the speed probe ran 0.78-0.85x grid 157's) or without the
background load.

Run:  python docs/results/calibration/round41/scale_host.py SRC DST HOOKS BUSY
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    src, dst, hooks, busy = Path(argv[0]), Path(argv[1]), float(argv[2]), float(argv[3])
    text = src.read_text()
    text = re.sub(
        r'(^(?:pre|post) = \{dist = "\w+", mean_ms = )([0-9.]+)',
        lambda m: f"{m.group(1)}{float(m.group(2)) * hooks:.5g}",
        text,
        flags=re.M,
    )
    text = re.sub(
        r"(^busy_cores = )([0-9.]+)",
        lambda m: f"{m.group(1)}{float(m.group(2)) * busy:.5g}",
        text,
        flags=re.M,
    )
    dst.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
