"""tests/run.sh's SLURM and serial parts collect only the test files whose text names their marker
(`python -m tests.part_markers <marker>` lists them), not every module (a collection imports them all: seconds of CPU,
issue 41).
A test marked another way (an alias, `from pytest import mark`) would then run in no part. Every collection checks
it, before -m deselects anything: tests/conftest.py uses this module's hook, and `pytest -p tests.part_markers` runs
it alone (its test)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List

import pytest

PART_MARKERS = ("slurm", "serial")  # the markers tests/run.sh gives a part of their own


def names_marker(text: str, marker: str) -> bool:
    """Whether a file's text says `pytest.mark.<marker>` (on a test, a class or `pytestmark`)."""
    return re.search(rf"pytest\.mark\.{marker}\b", text) is not None


def marked_files(marker: str, folder: Path) -> List[Path]:
    """The test files in folder that name the marker: what run.sh's part of that marker collects."""
    return sorted(path for path in folder.glob("test_*.py") if names_marker(path.read_text(), marker))


@pytest.hookimpl(tryfirst=True)  # before the mark plugin deselects by -m: every collected test is seen
def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    texts: Dict[Path, str] = {}
    for item in items:
        for marker in PART_MARKERS:
            if item.get_closest_marker(marker) is None:
                continue
            path = Path(item.path)
            text = texts.setdefault(path, path.read_text())
            if not names_marker(text, marker):
                raise pytest.UsageError(
                    f"{item.nodeid} is marked {marker}, but its file never says `pytest.mark.{marker}`: tests/run.sh "
                    f"would run it in no part (mark it with pytest.mark.{marker})")


if __name__ == "__main__":  # tests/run.sh: `python -m tests.part_markers slurm`, one path a line
    import sys

    if len(sys.argv) != 2 or sys.argv[1] not in PART_MARKERS:
        sys.exit(f"usage: python -m tests.part_markers MARKER, one of {', '.join(PART_MARKERS)} (got {sys.argv[1:]})")
    tests = Path(__file__).resolve().parent
    print("\n".join(str(path.relative_to(tests.parent)) for path in marked_files(sys.argv[1], tests)))
