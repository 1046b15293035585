"""``bench/calibrate/gpu.py``: the GPU scenario against GPU run 4's committed run files."""

from __future__ import annotations

import importlib
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CALIBRATE = ROOT / "bench" / "calibrate"
RUN4 = ROOT / "docs" / "results" / "gpu" / "run4"


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """The script as a module (it imports compare.py from beside itself)."""
    monkeypatch.syspath_prepend(str(CALIBRATE))
    return importlib.import_module("gpu")


def test_each_variant_is_simulated_under_its_own_policy(gpu: types.ModuleType) -> None:
    assert gpu.policies([RUN4]) == {
        "independent": "independent",
        "fifo": "fifo",
        "sjf": "sjf",
        "fair-usage": "fair:usage=30000,threshold=200,cap=1000",
    }


def test_the_table_sets_every_run_level_beside_a_prediction(
    gpu: types.ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "compare.md"
    assert gpu.main([str(RUN4), "--seeds", "1", "--requests", "4000", "--markdown", str(out)]) == 0
    text = out.read_text()
    assert capsys.readouterr().out == text + "\n"  # printed, and written as it was printed
    rows = [line for line in text.splitlines() if line.startswith("| ") and "offered" not in line]
    # run 4's grid: 5 levels of 4 variants (independent's two repeats pooled into one row)
    assert len(rows) == 20
    assert {row.split(" | ")[0].lstrip("| ") for row in rows} == {
        "independent",
        "fifo",
        "sjf",
        "fair-usage",
    }
    assert "below the knee" in text
