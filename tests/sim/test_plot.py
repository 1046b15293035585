"""``--plot``: a PNG of latency and SLO attainment against load."""

import importlib.util
from pathlib import Path

import pytest

from lanes.errors import LanesError
from lanes.sim import plot

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_writes_a_png(tmp_path: Path, fake_results) -> None:
    path = tmp_path / "out.png"
    plot.write_plot(fake_results(), path)
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC)
    assert len(data) > 10_000
    assert [p.name for p in tmp_path.iterdir()] == ["out.png"]  # no temporary left


def test_missing_matplotlib_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name)
    )
    with pytest.raises(LanesError) as info:
        plot.check_available()
    assert info.value.code == "missing_dependency"
    assert "lanes[plot]" in info.value.message
