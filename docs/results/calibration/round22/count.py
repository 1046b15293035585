"""How many figures below the knee each compare.py / against_demo.py markdown meets within 15 %
and within the repeats' range (the sum of its summary lines), and since the twenty-sixth round
how many within 15 % or inside the 95 % confidence interval of the lab's mean (when the file
says so).

Run:  python count.py FILE.md [FILE.md ...]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    for name in argv:
        near = figures = inside = near_or_ci = 0
        for line in Path(name).read_text().splitlines():
            if line.startswith("- ") and "within 15%" in line:
                for a, b in re.findall(r"(\d+)/(\d+) within 15%", line):
                    near, figures = near + int(a), figures + int(b)
                inside += sum(int(a) for a, _ in re.findall(r"(\d+)/(\d+) in range", line))
                near_or_ci += sum(
                    int(a) for a in re.findall(r"(\d+)/\d+ in the mean's 95% CI", line)
                )
        ci = (
            f", {near_or_ci} within 15 % or the mean's 95 % CI"
            if "95% CI" in Path(name).read_text()
            else ""
        )
        print(f"{Path(name).name}: {near} of {figures} within 15 %, {inside} in range{ci}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
