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

from hpml.analysis import registry
from hpml.analysis.report import build_report
from hpml.analysis.results import WorkloadResults
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


# --- damaged or copied results never take the report down or count twice (a bad-input probe, issue 25's rule) ---

def left_out(report) -> dict:
    """{result path: why} of the report's "Results not in a table"."""
    return {where: why for row, why in report.left_out for where in [row["path"]]}


def test_a_result_that_breaks_a_section_is_left_out_with_the_error_and_the_rest_is_reported(tmp_path):
    write_manifest(tmp_path, points=[0, 1])
    write_result(tmp_path, good(0))
    broken = good(1)
    broken["measurements"]["batch_probe"] = [1]  # a list where the batch probe's object belongs: the table's TypeError
    write_result(tmp_path, broken)

    report = build_report(tmp_path)

    why = left_out(report)[str(tmp_path / "points/1/result.json")]
    assert why.startswith("breaks the train section of the train report (") and "Error" in why
    assert "| 1 × 1 |" in report.markdown  # point 0's row is still there


def test_results_that_only_break_a_section_together_are_one_problem(tmp_path, monkeypatch):
    real = registry.REPORTS["train"]

    def fails_on_two(results):
        if len(results.ok) > 1:
            raise TypeError("'<' not supported between instances of 'str' and 'int'")
        return real[0](results)

    monkeypatch.setitem(registry.REPORTS, "train", (fails_on_two,))
    write_manifest(tmp_path, points=[0, 1])
    write_result(tmp_path, good(0))
    write_result(tmp_path, good(1))

    report = build_report(tmp_path)

    messages = list(problems(report).values())
    assert any(m.startswith("the test_report_inventory section of the train report was not built: its results "
                            "together raise TypeError") for m in messages), messages


def test_a_copied_result_counts_once_and_is_named(tmp_path):
    write_manifest(tmp_path / "sweep", points=[0])
    write_result(tmp_path / "sweep", good(0))
    copy = tmp_path / "sweep" / "points" / "0_copy"
    copy.mkdir()
    (copy / "result.json").write_text((tmp_path / "sweep/points/0/result.json").read_text())
    other_launch = good(0)
    other_launch["measurements"]["epoch_time_s"] = [9, 5, 5]  # the same name and point, launched again: not a copy
    other_launch["measurements"]["epoch_time_s_per_rank"] = [[9], [5], [5]]
    write_result(tmp_path / "again", other_launch)

    report = build_report(tmp_path)

    assert len(report.loaded.rows) == 2
    assert problems(report)[str(copy / "result.json")] == (
        f"a copy of {tmp_path / 'sweep/points/0/result.json'} (equal in everything but its path): left out, so "
        "that it counts once")


@pytest.mark.parametrize("evaluation, message", [
    ({"epoch": [1, 2], "top1": [0.5, 97.5]}, "measurements.evaluation.top1: expected fractions in [0, 1]"),
    ({"epoch": [2, 1], "top1": [0.5, 0.6]}, "measurements.evaluation.epoch: expected increasing epochs >= 1"),
    ({"epoch": [1, 2], "top1": [0.5]}, "measurements.evaluation: its lists differ in length (epoch 2, top1 1)"),
    ([0.5], "measurements.evaluation: expected an object of lists"),
], ids=["percent", "order", "lengths", "list"])
def test_an_evaluation_record_out_of_its_range_is_a_problem(tmp_path, evaluation, message):
    doc = good(0)
    doc["measurements"]["evaluation"] = evaluation
    write_result(tmp_path, doc)

    found = problems(build_report(tmp_path))

    assert found[str(tmp_path / "points/0/result.json")].startswith(message)


def test_a_point_folder_in_a_link_loop_or_unreadable_is_one_line(tmp_path):
    write_manifest(tmp_path, points=[0, 1])
    write_result(tmp_path, good(0))
    (tmp_path / "points" / "1").symlink_to(tmp_path / "points" / "1")  # a link to itself

    report = build_report(tmp_path)

    assert [row["identity"]["point"] for row in report.loaded.rows] == [0]
    assert str(tmp_path / "points/1/result.json") in problems(report)


def test_a_figure_a_damaged_value_breaks_is_one_line_and_the_others_are_drawn(tmp_path, capsys):
    from hpml.report_kit.sections import Figure, Section, draw_figures

    def breaks(path):
        raise ValueError("cannot convert float NaN to integer")  # what int(NA) raised in the data-loader figure

    def draws(path):
        path.write_bytes(b"png")
        return True

    section = Section("s", figures=[Figure("broken.png", breaks), Figure("fine.png", draws)])
    assert draw_figures([section], tmp_path) == [tmp_path / "fine.png"]
    assert capsys.readouterr().err == ("hpml: broken.png not drawn: a value it plots is malformed (ValueError: "
                                       "cannot convert float NaN to integer)\n")
