"""A sweep damaged in ways no earlier issue listed, on a real launched sweep, with the real `hpml` processes:
a result copied in from another point or sweep is not the point's (resume reruns the point and keeps the copy
under attempts/); a point killed after its ok result was written is completed, not rerun; two resumes of one
sweep at once never run a point twice (the second is refused in one line)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hpml.launcher.status import current_states
from hpml.launcher.sweep_lock import LOCK_FILE
from tests.conftest import HPML, run_hpml


@pytest.fixture(scope="module")
def finished_sweep(tmp_path_factory, hpml_in) -> Path:
    """A finished tiny sweep of two points, launched once; each test works on its own copy. The hardware probe at
    its tiny size: the claims are of the sweep's files, which any workload writes alike, and its points (this
    launch and the three resumes that rerun them) cost less than training ones (issue 41: hpml's small CNN's, and
    the synthetic workload's ResNet-18 before them; docs/results/test-suite-speed.md "stop 58")."""
    root = tmp_path_factory.mktemp("ownership")
    done = hpml_in(root, "launch", "experiment=tiny/probe", "sweep.seed=0,1", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return (root / "sweeps" / "latest").resolve()


@pytest.fixture
def sweep(finished_sweep, tmp_path) -> Path:
    copy = tmp_path / "sweep"
    shutil.copytree(finished_sweep, copy, symlinks=True)
    return copy


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    return int(done.stdout)


def edit(path: Path, change) -> None:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


@pytest.mark.parametrize("how", ["another_point", "another_sweep"])
def test_a_result_that_is_not_the_points_own_is_rerun_and_kept_aside(sweep, tmp_path, how):
    """Before: a valid ok result copied into another point's folder (or from a sweep of another name) made the
    point "completed"; `hpml resume` said there was nothing to do, and the point was never measured."""
    result = sweep / "points/1/result.json"
    if how == "another_point":
        shutil.copy(sweep / "points/0/result.json", result)
        expected = "it is the result of point 0 of sweep 'tiny_probe', not of point 1"
    else:
        edit(result, lambda doc: doc["identity"].update(sweep="another_sweep"))
        expected = "it is the result of sweep 'another_sweep', not of this sweep 'tiny_probe'"
    copied, finished = digest(result), digest(sweep / "points/0/result.json")

    status = run_hpml(["status", str(sweep)], cwd=tmp_path)
    assert "1/2 done" in status.stdout and expected in status.stdout, status.stdout
    resume = run_hpml(["resume", str(sweep)], cwd=tmp_path, timeout=300)

    assert resume.returncode == 0 and "Traceback" not in resume.stderr, resume.stdout + resume.stderr
    assert "resuming 1 of 2 point(s) of tiny_probe: 1" in resume.stdout
    assert [s.state for s in current_states(sweep)] == ["completed", "completed"]
    assert digest(sweep / "points/1/attempts/0/result.json") == copied  # kept, not deleted
    assert digest(sweep / "points/0/result.json") == finished
    assert json.loads(result.read_text())["identity"]["point"] == 1


def test_a_point_killed_after_its_ok_result_is_completed_and_not_rerun(sweep, tmp_path):
    """A SIGKILL of the point job between its result (written whole, by a rename) and its last state.json leaves
    state "running" with a dead pid. Before: "interrupted", and resume moved the finished result aside and ran
    the point again (the report then counted it twice: the attempt's result and the rerun's)."""
    for point in (0, 1):
        edit(sweep / f"points/{point}/state.json", lambda doc: doc.update(state="running", pid=dead_pid()))
    finished = [digest(sweep / f"points/{p}/result.json") for p in (0, 1)]

    resume = run_hpml(["resume", str(sweep)], cwd=tmp_path, timeout=120)

    assert resume.returncode == 0, resume.stdout + resume.stderr
    assert resume.stdout.startswith("hpml: nothing to resume in ") and "2 completed" in resume.stdout
    assert [digest(sweep / f"points/{p}/result.json") for p in (0, 1)] == finished
    assert not (sweep / "points/0/attempts").exists() and not (sweep / "points/1/attempts").exists()


def test_two_resumes_at_once_never_run_a_point_twice(sweep, tmp_path):
    """Before: both resumes read the same states and each ran the unfinished points, two at once in one folder,
    the later run overwriting the earlier one's finished result.json. Now the second is one line, exit 2, and
    touches nothing; once the first has ended, the lock is free again."""
    for point in (0, 1):
        for name in ("result.json", "state.json", "logs"):
            path = sweep / f"points/{point}/{name}"
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    first = subprocess.Popen(HPML + ["resume", str(sweep)], cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (sweep / "points/0/state.json").exists():  # the first resume holds the lock and runs point 0
            assert time.monotonic() < deadline and first.poll() is None, first.communicate()
            time.sleep(0.1)
        second = run_hpml(["resume", str(sweep)], cwd=tmp_path, timeout=60)
        out, err = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
    assert second.returncode == 2 and len(second.stderr.strip().splitlines()) == 1, second.stderr
    assert f"cannot resume {sweep}: another hpml launch or resume is running its points (hpml resume on " \
        in second.stderr
    assert second.stdout == ""
    assert first.returncode == 0, out + err
    assert "resuming 2 of 2 point(s)" in out
    assert [s.state for s in current_states(sweep)] == ["completed", "completed"]
    for point in (0, 1):  # each point ran once: one run in its logs, one rerun recorded (issue 35: attempts/<k>/)
        attempts = sweep / f"points/{point}/attempts"
        assert sorted(p.name for p in attempts.iterdir()) == ["0"]  # the launch's job; a second rerun would add 1
        assert not (attempts / "0" / "result.json").exists()  # its files were deleted above: nothing moved aside
        log = (sweep / f"points/{point}/logs/torchrun.node0.out").read_text()
        assert log.count("$ ") == 1, log
    assert (sweep / LOCK_FILE).is_file()
    again = run_hpml(["resume", str(sweep)], cwd=tmp_path, timeout=60)
    assert again.returncode == 0 and again.stdout.startswith("hpml: nothing to resume"), again.stderr
