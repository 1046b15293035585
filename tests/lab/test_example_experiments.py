"""Every experiment file under examples/experiments parses as ``lanes bench run`` reads it (its
relative trace and corpus paths resolved from the file's own folder), with variants named once
each: the files the docs tell users to run stay runnable."""

from __future__ import annotations

from pathlib import Path

import pytest

from lanes.lab.experiment import parse_experiment

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "experiments"
FILES = sorted(EXAMPLES.glob("*.toml"))


def test_there_are_example_experiments() -> None:
    assert len(FILES) >= 10, FILES


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_an_example_experiment_parses(path: Path) -> None:
    exp = parse_experiment(path.read_text(encoding="utf-8"), source=path)
    names = [v.name for v in exp.variants]
    assert names and len(names) == len(set(names)), names
    assert exp.baseline is None or exp.baseline in names
