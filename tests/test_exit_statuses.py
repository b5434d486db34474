"""Every verb's exit status means one thing (launcher.cli.EXIT_STATUSES, issue 45 item 1): 0 done, 1 the check failed
(failed points, a regression, an undecided gate), 2 bad input in one line, before any work. Here, the class of bad
input that used to slip through: where a verb writes cannot be written. Each verb that writes, with its output
under a regular file, in a read-only mount (root: permissions do not stop it, the file system does; the mount lives
in a private mount namespace of the command alone) and in a folder without write permission (not for root, whom
os.access lets write anywhere): exit 2, one `hpml: error:` line, nothing written, no traceback.

The 0s and 1s of each verb on real sweeps are tested with the verb: launch and resume (a failed point is 1:
test_point_status.py, test_local_launch.py), compare's gate (test_compare.py: regression and undecided)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Callable, Dict, List

import pytest

from hpml.launcher.cli import EXIT_STATUSES, USAGE
from tests.conftest import HPML

A_SWEEP = ("training_techniques", "2026-11-25_15-37-57_profile_h100")  # committed, packed in its sweeps.tgz


def test_the_exit_statuses_are_listed_once_in_the_usage():
    listed = USAGE.split("\nexit status:\n")[1].splitlines()
    assert [int(line.split()[0]) for line in listed] == [0, 1, 2, 130] == list(EXIT_STATUSES)


@pytest.fixture
def sweep(tmp_path, committed_sweeps) -> Path:
    copy = tmp_path / "sweep"
    shutil.copytree(committed_sweeps(A_SWEEP[0]) / A_SWEEP[1], copy)
    shutil.rmtree(copy / "report", ignore_errors=True)
    return copy


# verb -> its command line, given (the sweep to read, the place it must write): every verb of launcher.cli that writes
WRITERS: Dict[str, Callable[[Path, Path], List[str]]] = {
    "launch": lambda sweep, place: ["launch", "experiment=tiny/train", f"sweep.root={place}"],
    "report": lambda sweep, place: ["report", str(sweep), "--out", str(place)],
    "compare": lambda sweep, place: ["compare", str(sweep), str(sweep), "--out", str(place)],
    "evaluate": lambda sweep, place: ["evaluate", str(sweep), "--images", str(sweep), "--out", str(place)],
    "data --root": lambda sweep, place: ["data", "digits", "--root", str(place)],
    "data --ood": lambda sweep, place: ["data", "digits", "--root", str(sweep.parent / "d"), "--ood", str(place)],
    "data --jpeg-folder": lambda sweep, place: ["data", "digits", "--root", str(sweep.parent / "d"),
                                                "--jpeg-folder", str(place)],
    "model-stats --out": lambda sweep, place: ["model-stats", "resnet18", "--out", str(place / "r18.md")],
    "model-stats --figure": lambda sweep, place: ["model-stats", "resnet18", "--figure", str(place / "r18.png")],
}


def run(args: List[str], cwd: Path, wrapper: List[str] = ()) -> subprocess.CompletedProcess:
    return subprocess.run([*wrapper, *HPML, *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def assert_refused_before_any_work(done: subprocess.CompletedProcess, tmp_path: Path, before: set) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == "" and done.stderr.startswith("hpml: error: "), done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert set(tmp_path.rglob("*")) == before  # nothing written anywhere: no report, no data, no sweep


def tree(tmp_path: Path) -> set:
    return set(tmp_path.rglob("*"))


@pytest.mark.parametrize("verb", sorted(WRITERS))
def test_an_output_under_a_file_is_one_line_and_exit_2_before_any_work(tmp_path, sweep, verb):
    (tmp_path / "a_file").write_text("x")
    before = tree(tmp_path)
    done = run(WRITERS[verb](sweep, tmp_path / "a_file" / "out"), tmp_path)
    assert_refused_before_any_work(done, tmp_path, before)
    assert str(tmp_path / "a_file") in done.stderr, done.stderr  # it names what is in the way


def read_only_mount(folder: Path) -> List[str]:
    """A command prefix that runs the command with `folder` bound read-only onto itself, in a mount namespace of its
    own (the mount ends with the command; nothing outside sees it)."""
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount --bind -o ro "$0" "$0" && exec "$@"', str(folder)]


def mounts_work() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(read_only_mount(Path("/tmp")) + ["true"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not mounts_work(), reason="a read-only bind mount needs root (and unshare)")
@pytest.mark.parametrize("verb", sorted(WRITERS) + ["resume"])
def test_an_output_on_a_read_only_mount_is_one_line_and_exit_2_even_for_root(tmp_path, sweep, verb):
    locked = tmp_path / "locked"
    locked.mkdir()
    if verb == "resume":  # resume writes into the sweep itself: its lock, the moved attempts, the new results
        shutil.move(sweep, locked / "sweep")
        args = ["resume", str(locked / "sweep")]
    else:
        args = WRITERS[verb](sweep, locked)
    before = tree(tmp_path)
    done = run(args, tmp_path, wrapper=read_only_mount(locked))
    assert_refused_before_any_work(done, tmp_path, before)
    assert "Read-only file system" in done.stderr or "not writable" in done.stderr or \
        "may not be written" in done.stderr, done.stderr


@pytest.mark.skipif(not mounts_work(), reason="a read-only bind mount needs root (and unshare)")
def test_status_reads_a_sweep_it_may_not_write(tmp_path, sweep):
    """status only reads (its scheduler accounting is a cache it skips there): a read-only sweep still answers, 0."""
    locked = tmp_path / "locked"
    locked.mkdir()
    shutil.move(sweep, locked / "sweep")
    done = run(["status", str(locked / "sweep")], tmp_path, wrapper=read_only_mount(locked))
    assert done.returncode == 0 and done.stderr == "" and "completed" in done.stdout, done.stdout + done.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes whatever a folder's permissions say")
@pytest.mark.parametrize("verb", sorted(WRITERS) + ["resume"])
def test_an_output_in_a_folder_without_write_permission_is_one_line_and_exit_2(tmp_path, sweep, verb):
    locked = tmp_path / "locked"
    locked.mkdir()
    if verb == "resume":
        shutil.move(sweep, locked / "sweep")
        args = ["resume", str(locked / "sweep")]
        (locked / "sweep").chmod(0o555)
    else:
        args = WRITERS[verb](sweep, locked)
    locked.chmod(0o555)
    try:
        before = tree(tmp_path)
        assert_refused_before_any_work(run(args, tmp_path), tmp_path, before)
    finally:
        locked.chmod(0o755)
        if (locked / "sweep").exists():
            (locked / "sweep").chmod(0o755)
