"""A point's state from its files and the scheduler's view (launcher.status), without any scheduler: the
combination rule on literal inputs, then the same rules over real files in a sweep folder."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from hpml.launcher.backends.local import LocalBackend
from hpml.launcher.failure_reason import died_before_start, job_log_reason
from hpml.launcher.manifest import read_manifest
from hpml.launcher.processes import process_alive
from hpml.launcher.progress import ProgressPrinter
from hpml.launcher.status import (
    RUNNER_GONE,
    PointState,
    combine,
    point_states,
    progress_line,
    state_from_files,
    status_table,
    summary_counts,
)
from tests.factories import envelope

LOST = "the scheduler no longer knows this job and it left no result"
OK = envelope({"name": "synthetic"}, point=0)
OOM = envelope({"name": "synthetic"}, point=0, status="oom", reason="CUDA out of memory")


@pytest.mark.parametrize("files, scheduler, has_job, answered, expected", [
    # a result that says ok is final, whatever the scheduler says
    (("completed", None), {"state": "failed"}, True, True, ("completed", None)),
    (("completed", None), None, True, False, ("completed", None)),
    # a finished, unsuccessful scheduler state wins over the files, keeping the files' reason
    (("running", None), {"state": "cancelled"}, True, True, ("cancelled", None)),
    (("failed", "boom"), {"state": "timeout"}, True, True, ("timeout", "boom")),
    (None, {"state": "node_fail"}, True, True, ("node_fail", None)),
    # otherwise the files speak
    (("failed", "boom"), {"state": "running"}, True, True, ("failed", "boom")),
    (("running", None), None, True, False, ("running", None)),
    # no file: the scheduler speaks; "completed" without a result is a failure
    (None, {"state": "completed"}, True, True, ("failed", "the job ended without writing a result")),
    (None, {"state": "running"}, True, True, ("running", None)),
    (None, {"state": "pending"}, True, True, ("pending", None)),
    # neither: lost if the scheduler answered and does not know the job, pending if it did not answer
    (None, None, True, True, ("lost", LOST)),
    (None, None, True, False, ("pending", None)),
    (None, None, False, True, ("not_submitted", None)),
    (None, None, False, False, ("not_submitted", None)),
])
def test_files_and_scheduler_combine(files, scheduler, has_job, answered, expected):
    assert combine(files, scheduler, has_job, answered) == expected


@pytest.mark.parametrize("files, scheduler, has_job, answered, alive, expected", [
    (("running", None), None, True, False, False, ("interrupted", RUNNER_GONE)),
    (("running", None), None, True, True, True, ("running", None)),
    (("running", None), {"state": "running"}, True, True, None, ("running", None)),
    (("running", None), {"state": "pending"}, True, True, None, ("running", None)),
    # the runner is gone, but SLURM still holds the job (COMPLETING while it records a memory kill; requeued): the
    # scheduler's end decides, not the dead pid (a check's memory-kill test once ended `interrupted` in that gap)
    (("running", None), {"state": "running"}, True, True, False, ("running", None)),
    (("running", None), {"state": "pending"}, True, True, False, ("running", None)),
    (("running", None), {"state": "failed"}, True, True, False, ("failed", None)),
    (("running", None), {"state": "completed"}, True, True, None,
     ("failed", "the job ended, but its state.json still says running")),
    (("running", None), None, True, True, None,
     ("lost", "its state.json says running, but the scheduler no longer knows its job")),
])
def test_running_counts_only_while_its_runner_may_live(files, scheduler, has_job, answered, alive, expected):
    """alive: whether the process that runs the point lives, None where this host cannot tell (then the
    scheduler decides, and an unanswered scheduler keeps the point running); a job the scheduler still holds is
    the scheduler's to end."""
    assert combine(files, scheduler, has_job, answered, alive) == expected


def write(path: Path, document) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(document if isinstance(document, str) else json.dumps(document))


@pytest.mark.parametrize("state, result, expected", [
    (None, None, None),
    ({"state": "running"}, None, ("running", None)),
    ({"state": "failed", "reason": "exit 1"}, OK, ("failed", "exit 1")),  # the job's word is last
    # a stop from outside after the result was written whole: the work is done
    ({"state": "interrupted", "reason": "interrupted by SIGTERM"}, OK, ("completed", None)),
    ({"state": "timeout", "reason": "time limit"}, OK, ("completed", None)),
    ({"state": "interrupted", "reason": "interrupted by SIGTERM"}, None, ("interrupted", "interrupted by SIGTERM")),
    ({"state": "cancelled", "reason": "scancel"}, {"status": "ok"}, ("cancelled", "scancel")),  # not a valid result
    ({"state": "running"}, OK, ("running", None)),  # a result is written before the job ends
    ({"state": "requeued"}, None, None),  # neither finished nor running: proves nothing yet
    (None, OK, ("completed", None)),
    ({"state": "completed"}, OK, ("completed", None)),
    (None, OOM, ("oom", "CUDA out of memory")),
    ('{"state": "compl', OK, ("completed", None)),  # a torn state.json is ignored
    # completed needs a valid ok result: never a missing, torn or wrongly shaped one
    ({"state": "completed"}, None, ("failed", "its state.json says completed, but it has no result.json")),
    ({"state": "completed"}, '{"schema_version": 1, "ide',
     ("failed", "result.json: truncated JSON: Unterminated string starting at (line 1, column 23)")),
    (None, {"status": "ok"}, ("failed", "result.json: not a valid result: schema_version: missing")),
    (None, {**OK, "status": 1}, ("failed", "result.json: not a valid result: status: expected one of ok, "
                                           "failed, oom, timeout, got 1")),
    ({"state": "completed"}, [OK], ("failed", "result.json: not a valid result: the document is list, "
                                              "not a JSON object")),
])
def test_state_from_files(tmp_path, state, result, expected):
    if state is not None:
        write(tmp_path / "state.json", state)
    if result is not None:
        write(tmp_path / "result.json", result)
    assert state_from_files(tmp_path) == expected


def make_sweep(root: Path, job_ids) -> Path:
    points = [{"point": i, "overrides": [f"workload.lr=0.{i + 1}"], "job_id": job}
              for i, job in enumerate(job_ids)]
    write(root / "manifest.json", {"manifest_version": 1, "sweep": "study", "cluster": "slurm", "points": points})
    return root


def test_point_states_of_a_sweep(tmp_path):
    sweep = make_sweep(tmp_path, ["5_0", "5_1", "5_2", "5_3", None])
    write(sweep / "points/0/result.json", OK)
    write(sweep / "points/0/state.json", {"state": "completed"})
    write(sweep / "points/1/state.json", {"state": "running"})
    write(sweep / "jobs/5_2/5_2_0_log.err", "".join(f"line {i}\n" for i in range(1, 9)))
    scheduler = {"5_0": {"state": "completed"}, "5_1": {"state": "cancelled"}, "5_2": {"state": "failed"}}
    states = point_states(sweep, scheduler)
    assert [(s.point, s.state, s.job_id) for s in states] == [
        (0, "completed", "5_0"), (1, "cancelled", "5_1"), (2, "failed", "5_2"), (3, "lost", "5_3"),
        (4, "not_submitted", None)]
    assert states[2].reason == "line 8"  # the last meaningful line of submitit's stderr
    assert states[1].reason is None  # no log left: no reason to show
    assert states[3].reason == LOST
    assert states[0].overrides == ["workload.lr=0.1"]
    # judged by the files alone (the scheduler did not answer): jobs it cannot see are pending
    assert [s.state for s in point_states(sweep, None)] == ["completed", "running", "pending", "pending",
                                                             "not_submitted"]


def test_a_jobs_reason_is_its_logs_last_meaningful_line_and_never_waits_on_it(tmp_path):
    assert job_log_reason(tmp_path / "jobs" / "7_0_0_log.err") is None  # no log
    log = tmp_path / "jobs" / "7_1" / "7_1_0_log.err"
    log.parent.mkdir(parents=True)
    log.write_text("Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n    import hpml\n"
                   "ModuleNotFoundError: import of hpml halted; None in sys.modules\n\n=====\n"
                   "srun: error: n1: task 0: Exited with exit code 1\n")  # srun's consequence, not the cause
    assert job_log_reason(log) == "ModuleNotFoundError: import of hpml halted; None in sys.modules"
    assert died_before_start(tmp_path, log) == ("the job died before its point started: ModuleNotFoundError: "
                                                  "import of hpml halted; None in sys.modules (log: jobs/7_1/7_1_0_log.err)")
    fifo = tmp_path / "jobs" / "7_2" / "7_2_0_log.err"
    fifo.parent.mkdir()
    os.mkfifo(fifo)  # opened for reading, it would wait for a writer forever
    assert job_log_reason(fifo) is None
    assert died_before_start(tmp_path, fifo).endswith("and its log (jobs/7_2/7_2_0_log.err) says nothing")


def test_progress_line_and_status_table():
    states = [PointState(0, "completed", None, "5_0", ["a=1"]), PointState(1, "running", None, "5_1", []),
              PointState(2, "pending", None, "5_2", ["a=3"]), PointState(3, "not_submitted", None, None, []),
              PointState(4, "oom", "trace\nCUDA out of memory", "5_4", ["a=5"]),
              PointState(5, "cancelled", None, "5_5", [])]
    assert summary_counts(states) == {"done": 1, "running": 1, "failed": 0, "pending": 2, "total": 6,
                                      "cancelled": 1, "out of memory": 1}
    assert progress_line("s", states) == "[s] 1/6 done, 1 running, 2 pending, 0 failed, 1 cancelled, 1 out of memory"
    assert status_table(states).splitlines() == [
        "point  state          job id        overrides / reason",
        "0      completed      5_0           a=1",
        "1      running        5_1           (defaults)",
        "2      pending        5_2           a=3",
        "3      not_submitted  -             (defaults)",
        "4      oom            5_4           a=5",
        "       reason: CUDA out of memory",
        "5      cancelled      5_5           (defaults)",
    ]


def test_local_jobs_are_lost_only_once_their_launch_is_gone():
    local_jobs = LocalBackend().job_states
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                           text=True, check=True)
    gone = int(ended.stdout)
    assert process_alive(os.getpid()) and not process_alive(gone) and not process_alive(None)
    here = socket.gethostname()
    assert local_jobs({"launcher": {"host": here, "pid": os.getpid()}}) is None  # still running: files decide
    assert local_jobs({"launcher": {"host": here, "pid": gone}}) == {}  # gone: unfinished points are lost
    assert local_jobs({"launcher": {"host": here + "-elsewhere", "pid": gone}}) is None  # cannot tell
    assert local_jobs({}) is None


def test_the_progress_line_names_every_end_and_calls_failed_only_what_failed():
    from hpml.launcher.status import FINISHED

    ends = [PointState(i, state, None, f"5_{i}", []) for i, state in enumerate(FINISHED)]
    assert progress_line("s", ends) == (f"[s] 1/{len(FINISHED)} done, 0 running, 0 pending, 1 failed, 1 interrupted, "
                                        "1 cancelled, 1 timed out, 2 out of memory, 1 node failed, 1 lost")
    interrupted = [PointState(0, "completed", None, "1", []), PointState(1, "interrupted", "SIGTERM", "2", [])]
    assert progress_line("s", interrupted) == "[s] 1/2 done, 0 running, 0 pending, 0 failed, 1 interrupted"


def test_the_progress_line_is_printed_only_when_it_changes(tmp_path):
    printed = []
    printer = ProgressPrinter(tmp_path, "s", out=printed.append)
    running = [PointState(0, "running", None, "1", []), PointState(1, "pending", None, "2", [])]
    done = [PointState(0, "completed", None, "1", []), PointState(1, "pending", None, "2", [])]
    for states in (running, running, done, done):
        printer.show(states)
    assert printed == ["[s] 0/2 done, 1 running, 1 pending, 0 failed", "[s] 1/2 done, 0 running, 1 pending, 0 failed"]


def test_a_folder_without_a_manifest_is_one_line_for_the_user(tmp_path, hpml):
    with pytest.raises(FileNotFoundError, match="is not an hpml sweep directory"):
        read_manifest(tmp_path)
    done = hpml("status", str(tmp_path))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"hpml: error: {tmp_path} is not an hpml sweep directory (no readable manifest.json)\n"


def test_an_exited_but_unreaped_process_is_not_alive():
    """A SIGKILLed point job stays a zombie until it is reaped: status must not call its point running."""
    import os
    import subprocess
    import time

    from hpml.launcher.processes import is_zombie, process_alive

    child = subprocess.Popen(["true"])
    for _ in range(200):  # wait until it has exited (it stays a zombie: nobody has waited for it yet)
        if is_zombie(child.pid):
            break
        time.sleep(0.01)
    assert is_zombie(child.pid) and not process_alive(child.pid)
    child.wait()
    assert process_alive(os.getpid()) and not is_zombie(os.getpid())
