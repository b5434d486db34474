"""No point vanishes from a report (issue 25, item 1): every point a sweep knows (its manifest lists it, or
points/<n>/ exists) is in a table, under "Results not in a table", or named in Problems, whatever sits at
its result's path. Real files of every kind: a directory, a FIFO (os.mkfifo), a unix socket, a dangling
link, a link to a device, and a point folder that is itself a link."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from analysis import registry
from analysis.report import build_report
from analysis.results import WorkloadResults
from tests.factories import write_manifest, write_result
from tests.factories.train import train_result


def good(point: int) -> dict:
    return train_result(point=point, epoch_times=[9, 4, 4], step_times=[[1]] * 3, workers_per_node=point + 1)


def make_directory(path: Path) -> None:
    (path / "inner").mkdir(parents=True)  # an unpacked archive, a careless `mkdir -p`


def make_fifo(path: Path) -> None:
    os.mkfifo(path)


def make_socket(path: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))  # the socket file stays after close
    server.close()


def make_dangling_link(path: Path) -> None:
    path.symlink_to(path.parent / "gone.json")


def make_device_link(path: Path) -> None:
    path.symlink_to("/dev/null")


NOT_A_FILE = [
    (make_directory, "not a regular file (a directory)"),
    (make_fifo, "not a regular file (a FIFO)"),
    (make_socket, "not a regular file (a socket)"),
    (make_dangling_link, "a broken symbolic link (to "),
    (make_device_link, "not a regular file (a character device, through a symbolic link)"),
]


def problems(report) -> dict:
    """{problem path: message} of the report's Problems section."""
    section = report.markdown[report.markdown.index("## Problems"):]
    found = {}
    for line in section.splitlines():
        if line.startswith("- `"):
            path, _, message = line[3:].partition("`: ")
            found[path] = message
    return found


@pytest.mark.parametrize("make, expected", NOT_A_FILE, ids=lambda v: getattr(v, "__name__", ""))
def test_whatever_sits_at_a_results_path_is_named_in_problems(tmp_path, make, expected):
    write_manifest(tmp_path, points=[0, 1, 2])
    write_result(tmp_path, good(0))
    write_result(tmp_path, good(2))
    odd = tmp_path / "points" / "1" / "result.json"
    odd.parent.mkdir(parents=True)
    make(odd)

    report = build_report(tmp_path)

    assert [row["identity"]["point"] for row in report.loaded.rows] == [0, 2]
    assert problems(report)[str(odd)].startswith(expected), problems(report)
    assert "## Problems (1)" in report.markdown


def test_a_point_folder_the_manifest_does_not_list_is_named(tmp_path):
    write_manifest(tmp_path, points=[0])
    write_result(tmp_path, good(0))
    extra = tmp_path / "points" / "7"
    extra.mkdir(parents=True)
    (extra / "state.json").write_text(json.dumps({"state": "failed", "reason": "exit code 1"}))

    found = problems(build_report(tmp_path))

    assert found == {str(extra / "result.json"): "missing result (not in the manifest; job state: failed "
                                                  "(exit code 1))"}


def test_without_a_manifest_the_points_folder_says_which_points_exist(tmp_path):
    write_result(tmp_path, good(0))
    (tmp_path / "points" / "1").mkdir()

    found = problems(build_report(tmp_path))

    assert found == {str(tmp_path / "points/1/result.json"): "missing result (no manifest.json; no job state "
                                                             "recorded: never started, or still queued)"}


def test_a_damaged_manifest_still_leaves_every_point_folder_accounted_for(tmp_path):
    (tmp_path / "manifest.json").mkdir()
    write_result(tmp_path, good(0))
    (tmp_path / "points" / "1").mkdir()

    found = problems(build_report(tmp_path))

    assert found[str(tmp_path / "manifest.json")] == "not a regular file (a directory); refused"
    assert found[str(tmp_path / "points/1/result.json")].startswith("missing result (manifest.json unreadable; ")


def test_a_point_folder_that_is_a_link_is_read(tmp_path):
    write_manifest(tmp_path / "sweep", points=[0, 1])
    write_result(tmp_path / "sweep", good(0))
    elsewhere = write_result(tmp_path / "elsewhere", good(1)).parent
    (tmp_path / "sweep" / "points" / "1").symlink_to(elsewhere, target_is_directory=True)

    report = build_report(tmp_path / "sweep")

    assert [row["identity"]["point"] for row in report.loaded.rows] == [0, 1]
    assert problems(report) == {}


def test_an_ok_result_that_no_table_shows_is_a_problem(tmp_path, monkeypatch):
    """The safety net under every workload's report: one that builds no row from an ok result (a bug, a
    filter too strict) cannot make the point vanish. The train report is wrapped to drop point 1."""
    real = registry.REPORTS["train"]

    def drops_point_1(results):
        kept = [doc for doc in results.docs if doc["identity"]["point"] != 1]
        narrowed = WorkloadResults(results.workload, kept, results.unreadable, results.tabulated)
        return [section for part in real for section in part(narrowed)]

    monkeypatch.setitem(registry.REPORTS, "train", (drops_point_1,))
    write_manifest(tmp_path, points=[0, 1])
    write_result(tmp_path, good(0))
    write_result(tmp_path, good(1))

    found = problems(build_report(tmp_path))

    assert found == {str(tmp_path / "points/1/result.json"): "read and ok, but no table of the train report "
                                                             "shows it"}
