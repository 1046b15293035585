"""Flame graphs of folded stacks, as SVG files (rendered by inferno in :mod:`lanes._core`).

Folded stacks are the text format of Brendan Gregg's ``stackcollapse`` scripts, py-spy's
``--format raw`` and inferno's ``collapse-*`` tools: one line per distinct stack, the frames from
the root (the outermost caller) to the leaf (the frame that was running) joined by ``;``, then a
space and how many samples had that stack::

    main;serve;handle;json.dumps 12
    main;serve;poll 40

A frame name may hold spaces (py-spy writes ``handle (lanes/serving/app.py:88)``) but not ``;``.
Blank lines, lines starting with ``# `` and bare counts (py-spy writes `` 3`` for samples
taken while no Python code ran) are skipped; any other line without a whole-number count at its
end is an error naming its line number (inferno itself would skip it silently).
The width of a frame in the graph is the samples of every stack through it; the self time of a
frame is the samples of the stacks that end in it (:func:`top_frames`).

``perf script`` text is folded by :func:`lanes._core.collapse_perf`, whose counts are the
events' periods (nanoseconds for ``cpu-clock``) rather than sample counts.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from lanes import _core
from lanes.files import write_text_atomic

__all__ = ["render", "top_frames"]


def render(folded_path: Path, svg_path: Path, title: str, *, offcpu: bool = False) -> Path:
    """Render the folded stacks in ``folded_path`` as an SVG flame graph at ``svg_path``
    (written atomically) and return ``svg_path``.

    On-CPU stacks are drawn in the ``hot`` palette with ``samples`` in the tooltips; off-CPU
    stacks (``offcpu``: time spent waiting) in the blue ``io`` palette with ``samples off-CPU``.
    Raises ``ValueError`` (naming the file and the line) for a file with no stacks or a
    malformed line, ``LanesError("output_failed")`` when ``svg_path`` cannot be written.
    """
    folded = folded_path.read_text(encoding="utf-8", errors="replace")
    try:
        svg = _core.flamegraph_svg(
            folded,
            title=title,
            count_name="samples off-CPU" if offcpu else "samples",
            colors="io" if offcpu else "hot",
        )
    except ValueError as err:
        raise ValueError(f"{folded_path}: {err}") from err
    write_text_atomic(svg_path, svg)
    return svg_path


def top_frames(folded: str, n: int) -> list[tuple[str, int]]:
    """The ``n`` leaf frames with the most self samples, as ``(frame, samples)``, most first
    (ties by name). Lines that are not ``stack COUNT`` are ignored here; :func:`render` is the
    strict reader."""
    leaves: Counter[str] = Counter()
    for line in folded.splitlines():
        line = line.strip()
        if not line or line.startswith("# "):
            continue
        parts = line.rsplit(None, 1)
        if len(parts) != 2 or not (parts[1].isascii() and parts[1].isdigit()):
            continue
        leaves[parts[0].rsplit(";", 1)[-1]] += int(parts[1])
    ranked = sorted(
        ((frame, count) for frame, count in leaves.items() if count > 0),
        key=lambda item: (-item[1], item[0]),
    )
    return ranked[: max(n, 0)]
