"""tests/run.sh's SLURM and serial parts collect only the files that name their marker (tests/part_markers.py): a
test marked so that grep cannot see it stops the collection in one line, instead of running in no part."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO

MARK = "pytest" + ".mark"  # written apart, so that this file is not among those the parts collect


def collect(folder, source: str) -> subprocess.CompletedProcess:
    (folder / "test_marked.py").write_text(source)
    return subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-p", "tests.part_markers", "-m", "slurm", str(folder / "test_marked.py")],
                          cwd=folder, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


@pytest.mark.parametrize("marker", ["slurm", "serial"])
def test_a_marker_grep_cannot_see_stops_the_collection_in_one_line(tmp_path, marker):
    done = collect(tmp_path, f"from pytest import mark\n\n\n@mark.{marker}\ndef test_x():\n    pass\n")
    assert done.returncode == 4, done.stdout + done.stderr  # pytest's usage error
    (line,) = [line for line in done.stderr.splitlines() if "marked" in line]
    assert f"test_marked.py::test_x is marked {marker}" in line and f"pytest.mark.{marker}" in line


def test_a_marker_written_as_run_sh_greps_it_collects(tmp_path):
    done = collect(tmp_path, f"import pytest\n\npytestmark = {MARK}.slurm\n\n\ndef test_x():\n    pass\n")
    assert done.returncode == 0 and "test_marked.py::test_x" in done.stdout, done.stdout + done.stderr


def test_run_sh_collects_the_files_that_name_the_marker_and_only_those(tmp_path):
    from tests.part_markers import marked_files

    (tmp_path / "test_one.py").write_text(f"import pytest\n\n\n@{MARK}.serial\ndef test_x():\n    pass\n")
    (tmp_path / "test_two.py").write_text(f"import pytest\n\npytestmark = {MARK}.serialized\n")  # another name
    (tmp_path / "helper.py").write_text(f"import pytest\n\npytestmark = {MARK}.serial\n")  # not a test file
    assert marked_files("serial", tmp_path) == [tmp_path / "test_one.py"]
    listed = subprocess.run([sys.executable, "-m", "tests.part_markers", "slurm"], cwd=REPO, capture_output=True,
                            text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert "tests/test_slurm.py" in listed.stdout.splitlines() and "tests/test_compare.py" not in listed.stdout
    for wrong in (["gpu"], [], ["slurm", "serial"]):
        refused = subprocess.run([sys.executable, "-m", "tests.part_markers", *wrong], cwd=REPO, capture_output=True,
                                 text=True, timeout=120)
        assert refused.returncode == 1 and refused.stdout == "", refused.stdout
        assert refused.stderr == f"usage: python -m tests.part_markers MARKER, one of slurm, serial (got {wrong})\n"
