"""A scenario file with host keys added, or every call's cost of some models scaled (the
twenty-second round's scratch readings, tried.sh).

Run:  python with_keys.py SRC DST [KEY=VALUE ...] [MODEL*FACTOR ...]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def scaled(line: str, factor: float) -> str:
    """A service's ``gpu`` or ``batching`` line with every cost in it times ``factor``."""

    def mean(m: re.Match[str]) -> str:
        return f"mean_ms = {float(m[1]) * factor:.6g}"

    def point(m: re.Match[str]) -> str:
        return f"[{m[1]}, {float(m[2]) * factor:.6g}]"

    return re.sub(r"\[(\d+), ([\d.]+)\]", point, re.sub(r"mean_ms = ([\d.]+)", mean, line))


def main(argv: list[str]) -> int:
    src, dst, rest = Path(argv[0]), Path(argv[1]), argv[2:]
    keys = [a.replace("=", " = ", 1) for a in rest if "=" in a]
    scale = {m: float(f) for m, f in (a.split("*") for a in rest if "*" in a)}
    out, service = [], None
    for line in src.read_text().splitlines(keepends=True):
        if line == "[host]\n":
            line += "".join(k + "\n" for k in keys)
        if m := re.match(r'name = "(\w+)"', line):
            service = m[1]
        if service in scale and line.startswith(("gpu = ", "batching = ")):
            line = scaled(line, scale[service])
        out.append(line)
    dst.write_text("".join(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
