"""tests/run.sh's part 1 hands out its files heaviest first (tests/file_order.py): a real pytest-xdist run of a
made-up suite shows the order its worker runs the files in, with and without the list of seconds."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.file_order import file_seconds_text, recorded_seconds, seconds_per_file

FILES = {"test_a.py": 2, "test_b.py": 1, "test_c.py": 3}  # file: its number of tests


def made_up_suite(root):
    (root / "tests").mkdir()
    for name, tests in FILES.items():
        (root / "tests" / name).write_text("".join(f"def test_{i}():\n    pass\n\n\n" for i in range(tests)))
    (root / "pytest.ini").write_text("[pytest]\n")  # the rootdir: its tests/file_seconds.txt is the list


def files_in_run_order(root, *args: str):
    done = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-n", "1", "--dist",
                           "loadfile", *args, "tests"], cwd=root, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stdout + done.stderr
    ran = re.findall(r"PASSED (tests/test_\w+\.py)::test_(\d+)", done.stdout)
    assert len(ran) == sum(FILES.values()), done.stdout
    order = []
    for path, _ in ran:
        if not order or order[-1] != path:
            order.append(path)
    return order, [int(i) for path, i in ran if path == "tests/test_c.py"]


def test_the_listed_files_run_heaviest_first_and_unlisted_ones_before_them(tmp_path):
    made_up_suite(tmp_path)
    (tmp_path / "tests" / "file_seconds.txt").write_text("# comment\n5.0 tests/test_b.py\n1.0 tests/test_a.py\n")
    order, c_tests = files_in_run_order(tmp_path, "--no-loadscope-reorder", "-p", "tests.file_order")
    assert order == ["tests/test_c.py", "tests/test_b.py", "tests/test_a.py"]  # c is not listed: first
    assert c_tests == [0, 1, 2]  # a file's tests keep their order
    # what run.sh's flags change: xdist's own order puts the files with the most tests first
    assert files_in_run_order(tmp_path)[0] == ["tests/test_c.py", "tests/test_a.py", "tests/test_b.py"]


def test_the_seconds_of_a_file_are_the_sum_of_its_tests_in_a_junit_report(tmp_path):
    report = tmp_path / "report.xml"
    report.write_text(
        '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_a" name="test_0" time="1.5" />'
        '<testcase classname="tests.test_a" name="test_1[x]" time="2.0" />'
        '<testcase classname="tests.test_b.TestGroup" name="test_0" time="0.25" />'
        '</testsuite></testsuites>')
    assert seconds_per_file(str(report)) == {"tests/test_a.py": 3.5, "tests/test_b.py": 0.25}
    text = file_seconds_text({"tests/test_b.py": 0.25, "tests/test_a.py": 3.5}, "the command")
    assert text.splitlines()[-2:] == ["3.5 tests/test_a.py", "0.2 tests/test_b.py"]  # heaviest first
    assert "#   the command" in text and recorded_seconds(text) == {"tests/test_a.py": 3.5, "tests/test_b.py": 0.2}


def test_the_list_is_written_from_a_real_report_and_a_wrong_call_is_one_line(tmp_path):
    made_up_suite(tmp_path)
    report, out = tmp_path / "report.xml", tmp_path / "seconds.txt"
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
                          "tests"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    written = subprocess.run([sys.executable, "-m", "tests.file_order", str(report), str(out)], cwd=REPO,
                             capture_output=True, text=True, timeout=120)
    assert written.returncode == 0 and str(out) in written.stdout, written.stderr
    assert set(recorded_seconds(out.read_text())) == {f"tests/{name}" for name in FILES}
    wrong = subprocess.run([sys.executable, "-m", "tests.file_order", str(tmp_path / "none.xml")], cwd=REPO,
                           capture_output=True, text=True, timeout=120)
    assert wrong.returncode == 1 and len(wrong.stderr.strip().splitlines()) == 1, wrong.stderr
    assert wrong.stderr.startswith("usage: python -m tests.file_order REPORT.xml [OUT]")


@pytest.mark.parametrize("line", ["fast tests/test_a.py", "5.0", "nan tests/test_a.py", "5.0 "])
def test_a_damaged_list_stops_the_collection_in_one_line_naming_it(tmp_path, line):
    made_up_suite(tmp_path)
    (tmp_path / "tests" / "file_seconds.txt").write_text(f"1.0 tests/test_b.py\n{line}\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-p",
                           "tests.file_order", "tests"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 4, done.stdout + done.stderr  # pytest's usage error
    (said,) = [text for text in done.stderr.splitlines() if "file_seconds.txt" in text]
    assert "line 2 is not 'SECONDS PATH'" in said and "python -m tests.file_order REPORT.xml" in said
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("report, says", [
    ("not xml", "not a pytest --junitxml report"),
    ("<testsuites><testsuite><testcase classname='tests.test_a' name='t' time='abc'/></testsuite></testsuites>",
     "not a pytest --junitxml report"),
    ("<testsuites><testsuite></testsuite></testsuites>", "no test of a tests/test_*.py file in it"),
])
def test_a_report_it_cannot_use_is_one_line_and_writes_nothing(tmp_path, report, says):
    (tmp_path / "report.xml").write_text(report)
    out = tmp_path / "seconds.txt"
    done = subprocess.run([sys.executable, "-m", "tests.file_order", str(tmp_path / "report.xml"), str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert says in done.stderr and "nothing written" in done.stderr and not out.exists()
