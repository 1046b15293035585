"""How many figures below the knee each compare.py / against_demo.py markdown meets within 15 %
and within the repeats' range (the sum of its summary lines).

Run:  python count.py FILE.md [FILE.md ...]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    for name in argv:
        near = figures = inside = 0
        for line in Path(name).read_text().splitlines():
            if line.startswith("- ") and "within 15%" in line:
                for a, b in re.findall(r"(\d+)/(\d+) within 15%", line):
                    near, figures = near + int(a), figures + int(b)
                inside += sum(int(a) for a, _ in re.findall(r"(\d+)/(\d+) in range", line))
        print(f"{Path(name).name}: {near} of {figures} within 15 %, {inside} in range")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
