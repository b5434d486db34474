"""A folder a command writes (the report's --out, evaluate's --out, a sweep under sweep.root) that cannot be made
is one `hpml: error:` line and exit 2 before anything is read, run or written (contract/folders.py): a file where
the folder should be, a file among its parents. The real commands, in subprocesses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from hpml.contract.folders import empty_path_problem, folder_problem

REPO = Path(__file__).resolve().parent.parent
A_SWEEP = ("training_techniques", "2026-11-25_15-37-57_profile_h100")  # committed, packed in its sweeps.tgz


def test_folder_problem_names_what_is_in_the_way(tmp_path):
    (tmp_path / "file").write_text("x")
    assert folder_problem(tmp_path) is None
    assert folder_problem(tmp_path / "new" / "deeper") is None  # can be made; nothing is made
    assert not (tmp_path / "new").exists()
    assert folder_problem(tmp_path / "file") == f"{tmp_path / 'file'} exists and is not a folder"
    assert folder_problem(tmp_path / "file" / "a" / "b") == \
        f"{tmp_path / 'file'} is a file, so {tmp_path / 'file' / 'a' / 'b'} cannot be made under it"


def test_an_empty_path_is_a_problem_and_a_given_one_is_not():
    said = "is not allowed: a folder path (give . for the current directory)"
    assert empty_path_problem("--root", "") == f"--root='' {said}"
    assert empty_path_problem("--ood", "  ") == f"--ood='  ' {said}"
    assert [empty_path_problem("--root", text) for text in (None, ".", "data")] == [None, None, None]


def as_an_unprivileged_user(function):
    """function() as this user, or, for root (whom os.access lets write anywhere), in a forked child that has
    become nobody (uid and gid 65534) first; its result comes back through a pipe as JSON."""
    if os.geteuid() != 0:
        return function()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(65534)
            os.setuid(65534)
            os.write(write_end, json.dumps(function()).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        text = pipe.read()
    os.waitpid(pid, 0)
    return json.loads(text)


def test_folder_problem_names_an_unwritable_parent_and_one_it_cannot_look_into():
    base = Path(tempfile.mkdtemp(prefix="hpml-folders-"))  # not under pytest's 0700 folder: nobody must reach it
    try:
        base.chmod(0o755)
        (base / "locked").mkdir(mode=0o555)
        (base / "hidden").mkdir(mode=0o000)
        found = as_an_unprivileged_user(lambda: [folder_problem(base / "locked" / "out"),
                                                 folder_problem(base / "locked"),
                                                 folder_problem(base / "hidden" / "a" / "b")])
        assert found == [f"{base / 'locked' / 'out'} cannot be made: {base / 'locked'} is not writable",
                         f"{base / 'locked'} is not writable",
                         f"{base / 'hidden' / 'a' / 'b'} cannot be reached: no permission to look inside "
                         f"{base / 'hidden'}"]
    finally:
        for folder in ("locked", "hidden"):
            (base / folder).chmod(0o700)
        shutil.rmtree(base)


@pytest.fixture
def sweep(tmp_path, committed_sweeps) -> Path:
    copy = tmp_path / "sweep"
    shutil.copytree(committed_sweeps(A_SWEEP[0]) / A_SWEEP[1], copy)
    shutil.rmtree(copy / "report", ignore_errors=True)
    return copy


@pytest.mark.parametrize("verb", ["report", "evaluate"])
@pytest.mark.parametrize("where", ["file", "under_a_file"])
def test_an_out_folder_that_cannot_be_made_is_one_line_before_any_work(tmp_path, sweep, hpml, verb, where):
    (tmp_path / "a_file").write_text("x")
    out = tmp_path / "a_file" if where == "file" else tmp_path / "a_file" / "report"
    extra = ["--images", str(tmp_path)] if verb == "evaluate" else []
    done = hpml(verb, str(sweep), *extra, "--out", str(out))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("hpml: error: --out: ") and len(done.stderr.strip().splitlines()) == 1
    assert (tmp_path / "a_file").read_text() == "x" and not (sweep / "report").exists()


def test_a_sweep_root_under_a_file_is_one_line_before_anything_is_written(tmp_path, hpml):
    (tmp_path / "a_file").write_text("x")
    for extra in (["--dry-run"], []):
        done = hpml("launch", "experiment=quickstart", f"sweep.root={tmp_path / 'a_file' / 'sweeps'}", *extra)
        assert done.returncode == 2, done.stderr
        assert "is not allowed: " in done.stderr and "is a file, so " in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]


def test_a_report_folder_that_cannot_be_read_says_so_not_that_it_holds_no_result():
    from hpml.analysis.report import ReportError, build_report

    base = Path(tempfile.mkdtemp(prefix="hpml-folders-"))  # not under pytest's 0700 folder: nobody must reach it
    try:
        base.chmod(0o755)
        (base / "hidden").mkdir(mode=0o000)

        def attempt():
            try:
                build_report(base / "hidden")
            except ReportError as error:
                return str(error)
            return "no error"

        assert as_an_unprivileged_user(attempt) == (f"{base / 'hidden'} cannot be read (Permission denied); give a "
                                                    "folder you may read")
    finally:
        (base / "hidden").chmod(0o700)
        shutil.rmtree(base)


@pytest.mark.parametrize("verb, args", [
    ("evaluate", ["SWEEP", "--images", "TMP", "--out", "TMP/a_file/report"]),
    ("evaluate", ["SWEEP", "--images", ""]),
    ("model-stats", ["resnet18", "--out", "TMP/a_file/r18.md"]),
    ("model-stats", ["resnet18", "--figure", "TMP/a_file/r18.png"]),
], ids=["evaluate-out", "evaluate-images", "model-stats-out", "model-stats-figure"])
def test_refusals_of_the_arguments_import_no_torch(tmp_path, verb, args):
    """The output paths and the arguments are checked before evaluate or model-stats imports torch (3.5-6 CPU-s of
    a small machine): a fresh process, refused in one line, has imported neither torch nor torchvision."""
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "sweep").mkdir()
    args = [arg.replace("SWEEP", str(tmp_path / "sweep")).replace("TMP", str(tmp_path)) for arg in args]
    code = ("import sys\nfrom hpml.launcher.cli import main\ntry:\n    code = main(sys.argv[1:])\n"
            "except SystemExit as done:\n    code = done.code\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'torchvision'))[:3])\nsys.exit(code)")
    done = subprocess.run([sys.executable, "-c", code, verb, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout.strip() == "[]", done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert (tmp_path / "a_file").read_text() == "x"
