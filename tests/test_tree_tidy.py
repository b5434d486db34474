"""Generated output belongs under docs/results/ or nowhere (issue 25, item 5): no report or sweep folder is
tracked anywhere else. A report folder is recognised by its report.md; a sweep folder by its manifest.json
or its points/<n>/ layout (contract.sweep_layout)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import List

import pytest

from hpml.contract.sweep_layout import MANIFEST_FILE, POINTS_DIR

REPO = Path(__file__).resolve().parent.parent
KEPT_RESULTS = "docs/results/"
REPORT_FILE = "report.md"  # analysis.report.REPORT_MD (not imported: this test must not need pandas)
POINT_FOLDER = re.compile(rf"(^|/){POINTS_DIR}/\d+/")


def tracked_files() -> List[str]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed: cannot list the tracked files")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True)
    if listed.returncode != 0:
        pytest.skip(f"{REPO} is not a git checkout (git ls-files: {listed.stderr.decode().strip()})")
    return [path for path in listed.stdout.decode().split("\0") if path]


def generated(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name in (REPORT_FILE, MANIFEST_FILE) or bool(POINT_FOLDER.search(path))


def test_generated_output_is_tracked_only_under_docs_results():
    misplaced = [path for path in tracked_files() if generated(path) and not path.startswith(KEPT_RESULTS)]
    assert not misplaced, (f"generated reports or sweeps tracked outside {KEPT_RESULTS} (move them there, or "
                           f"`git rm -r --cached` them): {misplaced[:20]}")


@pytest.mark.parametrize("path, expected", [
    ("r1/report/report.md", True), ("sweeps/x/manifest.json", True), ("old/points/3/result.json", True),
    ("points/0/state.json", True), ("docs/results/lib/report.md", True), ("analysis/report.py", False),
    ("docs/result-example.json", False), ("tests/golden/sbatch.sh", False), ("docs/points.md", False),
])
def test_what_counts_as_generated(path, expected):
    assert generated(path) is expected
