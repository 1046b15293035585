"""Atomic output files.

A result file is either complete or absent: it is written to a temporary file in the same
directory, flushed to disk, and renamed over the target with :func:`os.replace` (atomic on POSIX
and Windows), so an interrupted run never leaves half a file where a complete one is expected.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import IO

from lanes.errors import OUTPUT_FAILED, LanesError


def check_writable(path: Path, what: str) -> None:
    """Fail early, before any expensive work, if ``path`` could not be written later."""
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise LanesError(OUTPUT_FAILED, f"{what} {path}: is a directory; give a file name")
    if not parent.is_dir():
        raise LanesError(OUTPUT_FAILED, f"{what} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise LanesError(OUTPUT_FAILED, f"{what} {path}: directory {parent} is not writable")


def write_atomic(path: Path, write: Callable[[IO[bytes]], None]) -> None:
    """Call ``write`` on a temporary file beside ``path``, then rename it to ``path``.

    The temporary file is created with the usual permissions (0o666 less the umask). On any
    failure it is removed and ``path`` is left as it was; an :class:`OSError` becomes
    ``LanesError("output_failed", ...)``.
    """
    parent = path.parent if str(path.parent) else Path(".")
    tmp: Path | None = None
    try:
        fd, tmp = _create_beside(parent, path.name)
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as err:
        reason = err.strerror or str(err)
        raise LanesError(OUTPUT_FAILED, f"cannot write {path}: {reason}") from err
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()


def _create_beside(parent: Path, name: str) -> tuple[int, Path]:
    """A new, exclusively created, hidden temporary file in ``parent``."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        tmp = parent / f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    data = text.encode("utf-8")

    def write(f: IO[bytes]) -> None:
        f.write(data)

    write_atomic(path, write)
