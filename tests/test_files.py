import os
from pathlib import Path
from typing import IO

import pytest

from lanes.errors import LanesError
from lanes.files import check_writable, write_atomic, write_text_atomic


def test_writes_the_file(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    write_text_atomic(target, "{}\n")
    assert target.read_text() == "{}\n"
    assert os.listdir(tmp_path) == ["out.json"]


def test_replaces_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    write_text_atomic(target, "new")
    assert target.read_text() == "new"


def test_a_failing_writer_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.png"
    target.write_text("old")

    def fail(f: IO[bytes]) -> None:
        f.write(b"half")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_atomic(target, fail)
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["out.png"]


def test_permissions_follow_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_text_atomic(tmp_path / "out.json", "{}")
    finally:
        os.umask(old)
    assert (tmp_path / "out.json").stat().st_mode & 0o777 == 0o644


def test_missing_directory_is_an_output_error(tmp_path: Path) -> None:
    with pytest.raises(LanesError) as info:
        write_text_atomic(tmp_path / "nope" / "out.json", "{}")
    assert info.value.code == "output_failed"
    assert "nope" in info.value.message


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("missing/out.json", "does not exist"),
        (".", "is a directory"),
    ],
)
def test_check_writable_refuses(tmp_path: Path, name: str, problem: str) -> None:
    with pytest.raises(LanesError) as info:
        check_writable(tmp_path / name, "--json")
    assert info.value.code == "output_failed"
    assert problem in info.value.message
    assert info.value.message.startswith("--json ")


def test_check_writable_accepts_a_new_file(tmp_path: Path) -> None:
    check_writable(tmp_path / "new.json", "--json")
