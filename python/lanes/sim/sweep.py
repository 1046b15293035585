"""The axes of a sweep — policies x loads x seeds — parsed from their command-line text.

- Loads: a comma-separated list whose items are numbers (``0.5``) or inclusive ranges
  ``A:B:STEP`` (``0.5:0.9:0.1`` is 0.5, 0.6, 0.7, 0.8, 0.9 — B is included when it lies on the
  grid within float tolerance). Each load is > 0; the result is sorted, without duplicates, and
  at most :data:`MAX_LOADS` long. A load is the offered fraction of the host's GPU capacity.
- Policies: a comma-separated list of names, each checked and made canonical by the native
  module. A policy's own arguments also use commas (``sjf:alpha=0.5,slack=20``), so an item of
  the form ``key=value`` continues the arguments of the policy before it.
- Seeds: a count N gives seeds 1..N.

Every refusal is ``LanesError("bad_argument", ...)`` naming the option and the value (an
unknown policy keeps the native module's code, ``unknown_policy``).
"""

from __future__ import annotations

import math

from lanes.errors import BAD_ARGUMENT, LanesError

MAX_LOADS = 200
MAX_SEEDS = 1000
_EPS = 1e-9


def parse_loads(text: str) -> list[float]:
    """Loads from ``"0.3,0.5"`` and/or ``"A:B:STEP"`` items: sorted, unique, each > 0."""
    loads: set[float] = set()
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            raise _bad("--loads", text, "an empty item; write numbers like 0.5,0.7 or A:B:STEP")
        if ":" in item:
            loads.update(_load_range(item, text))
        else:
            loads.add(_number(item, text, "a load"))
        if len(loads) > MAX_LOADS:
            raise _bad("--loads", text, f"more than {MAX_LOADS} loads")
    return sorted(loads)


def _number(item: str, text: str, what: str) -> float:
    try:
        value = float(item)
    except ValueError:
        raise _bad("--loads", text, f"{item!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise _bad("--loads", text, f"{item!r}: {what} must be a number > 0")
    return round(value, 9)


def _load_range(item: str, text: str) -> list[float]:
    parts = [p.strip() for p in item.split(":")]
    if len(parts) != 3:
        raise _bad("--loads", text, f"{item!r}: a range is A:B:STEP, e.g. 0.5:0.9:0.1")
    start = _number(parts[0], text, "a load")
    stop = _number(parts[1], text, "a load")
    step = _number(parts[2], text, "a step")
    if stop < start:
        raise _bad("--loads", text, f"{item!r}: the end {stop:g} is below the start {start:g}")
    count = math.floor((stop - start) / step + _EPS) + 1
    if count > MAX_LOADS:
        raise _bad("--loads", text, f"{item!r} has {count} loads: at most {MAX_LOADS}")
    return [round(start + i * step, 9) for i in range(count)]


def split_policies(text: str) -> list[str]:
    """Policy items of a comma-separated list; ``key=value`` items join the policy before."""
    items: list[str] = []
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            raise _bad("--policies", text, "an empty item; write names like independent,fifo,sjf")
        if "=" in item and ":" not in item and items and ":" in items[-1]:
            items[-1] += "," + item
        else:
            items.append(item)
    return items


def parse_policies(text: str) -> list[str]:
    """Canonical policy names from a comma-separated list, all checked before any is used.

    Raises the native module's ``LanesError`` (``unknown_policy``, ...) prefixed with
    ``--policies``, or ``bad_argument`` for an empty item or a policy named twice.
    """
    return canonical_policies(split_policies(text), option="--policies")


def canonical_policies(names: list[str], *, option: str = "policies") -> list[str]:
    """Check every name with ``lanes._core.parse_policy``; refuse duplicates."""
    from lanes import _core  # the native module; imported only where it is needed

    if not names:
        raise _bad(option, "", "no policy given")
    out: list[str] = []
    for name in names:
        try:
            canonical = _core.parse_policy(name)
        except LanesError as err:
            raise LanesError(err.code, f"{option}: {err.message}") from None
        if canonical in out:
            raise _bad(option, ",".join(names), f"{name!r} is given twice")
        out.append(canonical)
    return out


def seeds_from_count(count: int) -> list[int]:
    """Seeds 1..count."""
    if not 1 <= count <= MAX_SEEDS:
        raise _bad("--seeds", str(count), f"must be a count from 1 to {MAX_SEEDS}")
    return list(range(1, count + 1))


def _bad(option: str, value: str, problem: str) -> LanesError:
    """``OPTION 'VALUE': problem``; a problem that starts by quoting the whole value skips it."""
    quoted = repr(value)
    if problem.startswith(quoted):
        return LanesError(BAD_ARGUMENT, f"{option} {problem}")
    return LanesError(BAD_ARGUMENT, f"{option} {quoted}: {problem}")
