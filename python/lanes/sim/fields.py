"""Typed readers for the tables of a scenario file.

Parse, don't validate: :class:`Table` wraps one raw TOML table with its dotted path
(``service[1].gpu``) and hands out checked Python values. Every refusal is one line of the form
``scenario SOURCE: KEY = VALUE: what is allowed`` (or ``KEY is missing: ...``), raised as
``LanesError("scenario_invalid", ...)``, so a user can find the key, see what they wrote and
what to write instead.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

from lanes.errors import SCENARIO_INVALID, LanesError

S = TypeVar("S", bound=str)

_SHOW_LIMIT = 60
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")


def show(value: object) -> str:
    """``value`` as it would be written in TOML, shortened to one short line."""
    text = _toml_text(value)
    if len(text) > _SHOW_LIMIT:
        text = text[: _SHOW_LIMIT - 1] + "…"
    return text


def _toml_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{k} = {_toml_text(v)}" for k, v in value.items())
        return f"{{ {inner} }}" if inner else "{}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_text(v) for v in value) + "]"
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return repr(value)


def _range_text(kind: str, low: float | None, low_open: bool, high: float | None) -> str:
    parts = []
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {low:g}")
    if high is not None:
        parts.append(f"<= {high:g}")
    return f"must be {kind}" + (" " + " and ".join(parts) if parts else "")


def _in_range(x: float, low: float | None, low_open: bool, high: float | None) -> bool:
    if low is not None and (x <= low if low_open else x < low):
        return False
    return high is None or x <= high


@dataclass(frozen=True)
class Table:
    """One TOML table of a scenario, with its place in the file for messages."""

    raw: Mapping[str, Any]
    path: str
    """Dotted path of this table, ``""`` for the top level, e.g. ``service[1].gpu``."""
    source: str
    """The scenario as the user named it (a path or a built-in name)."""

    def key(self, name: str) -> str:
        """The dotted path of the child ``name``."""
        return f"{self.path}.{name}" if self.path else name

    def error(self, key: str, value: object, allowed: str) -> LanesError:
        """The error for child ``key`` holding ``value``; ``allowed`` says what would do."""
        return LanesError(
            SCENARIO_INVALID, f"scenario {self.source}: {self.key(key)} = {show(value)}: {allowed}"
        )

    def fail(self, key: str, allowed: str) -> NoReturn:
        """Raise the error for child ``key``, which is present, with its value."""
        raise self.error(key, self.raw[key], allowed)

    def missing(self, key: str, needs: str) -> NoReturn:
        """Raise the error for a required child ``key`` that is absent."""
        raise LanesError(
            SCENARIO_INVALID, f"scenario {self.source}: {self.key(key)} is missing: {needs}"
        )

    def only(self, allowed: Sequence[str]) -> None:
        """Refuse any key that is not in ``allowed``, naming the allowed keys."""
        for name in self.raw:
            if name not in allowed:
                self.fail(name, f"unknown key; allowed keys here: {', '.join(allowed)}")

    def has(self, key: str) -> bool:
        """Whether child ``key`` is present."""
        return key in self.raw

    def number(
        self,
        key: str,
        *,
        low: float | None = None,
        low_open: bool = False,
        high: float | None = None,
        default: float | None = None,
    ) -> float:
        """A finite number (integer or float) in range; required unless ``default`` is given."""
        if key not in self.raw:
            if default is None:
                self.missing(key, _range_text("a number", low, low_open, high))
            return default
        value = self.raw[key]
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or not _in_range(float(value), low, low_open, high)
        ):
            self.fail(key, _range_text("a number", low, low_open, high))
        return float(value)

    def optional_number(
        self, key: str, *, low: float | None = None, low_open: bool = False
    ) -> float | None:
        """A number in range, or ``None`` when the key is absent."""
        if key not in self.raw:
            return None
        return self.number(key, low=low, low_open=low_open)

    def integer(self, key: str, *, low: int, high: int, default: int | None = None) -> int:
        """An integer in ``[low, high]``; required unless ``default`` is given."""
        if key not in self.raw:
            if default is None:
                self.missing(key, _range_text("an integer", low, False, high))
            return default
        value = self.raw[key]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            self.fail(key, _range_text("an integer", low, False, high))
        return value

    def string(self, key: str, *, default: str | None = None) -> str:
        """A string; required unless ``default`` is given."""
        if key not in self.raw:
            if default is None:
                self.missing(key, "must be a string")
            return default
        value = self.raw[key]
        if not isinstance(value, str):
            self.fail(key, "must be a string")
        return value

    def name(self, key: str, *, default: str | None = None) -> str:
        """A name usable as a table column and a JSON key: letters, digits, ``_ . -``."""
        rule = "must be 1 to 40 letters, digits, '_', '.' or '-', starting with a letter or digit"
        if key not in self.raw and default is None:
            self.missing(key, rule)
        value = self.string(key, default=default)
        if key in self.raw and (not _NAME.fullmatch(value) or len(value) > 40):
            self.fail(key, rule)
        return value

    def choice(self, key: str, choices: Sequence[S], *, default: S | None = None) -> S:
        """One of ``choices``."""
        rule = "must be one of " + ", ".join(f'"{c}"' for c in choices)
        if key not in self.raw and default is None:
            self.missing(key, rule)
        value = self.string(key, default=default)
        for choice in choices:
            if value == choice:
                return choice
        self.fail(key, rule)

    def numbers(
        self, key: str, *, low: float, low_open: bool, default: Sequence[float]
    ) -> list[float]:
        """A non-empty array of numbers, each in range."""
        if key not in self.raw:
            return list(default)
        value = self.raw[key]
        if not isinstance(value, list) or not value:
            self.fail(key, "must be a non-empty array of numbers")
        items = Table({f"{key}[{i}]": v for i, v in enumerate(value)}, self.path, self.source)
        return [items.number(f"{key}[{i}]", low=low, low_open=low_open) for i in range(len(value))]

    def table(self, key: str, *, needs: str, default: Mapping[str, Any] | None = None) -> Table:
        """The sub-table ``key``; ``needs`` describes it for the message when it is wrong."""
        if key not in self.raw:
            if default is None:
                self.missing(key, needs)
            return Table(default, self.key(key), self.source)
        value = self.raw[key]
        if not isinstance(value, Mapping):
            self.fail(key, needs)
        return Table(value, self.key(key), self.source)

    def tables(self, key: str, *, needs: str) -> list[Table]:
        """The non-empty array of tables ``key`` (``[[key]]`` in TOML)."""
        if key not in self.raw:
            self.missing(key, needs)
        value = self.raw[key]
        if not isinstance(value, list) or not value:
            self.fail(key, needs)
        out = []
        for i, item in enumerate(value):
            if not isinstance(item, Mapping):
                raise self.error(f"{key}[{i}]", item, needs)
            out.append(Table(item, self.key(f"{key}[{i}]"), self.source))
        return out
