"""Issue 11, class 2: a failed point's reason is its root cause in one line, from real torchrun runs: a worker
killed by a signal, a worker raising before it could write a result (torchrun's error file), and a worker of a
real sweep killed with SIGKILL, as `hpml status` shows it; torchrun's whole report stays in the point's logs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
from pathlib import Path

import pytest

from hpml.launcher.failure_reason import failure_reason, memory_limit_kill
from hpml.launcher.torchrun import FORK_ENV
from tests.conftest import run_hpml, torchrun_as_a_job_runs_it
from tests.sweep_processes import start_launch, state, status_rows, sweep_of, wait_for, worker_pids

WORKER = textwrap.dedent("""
    import os, signal, time
    from torch.distributed.elastic.multiprocessing.errors import record

    @record
    def main():
        rank = int(os.environ["RANK"])
        if "{mode}" == "raise" and rank == 0:
            raise RuntimeError("Found no NVIDIA driver on your system.\\nPlease check that you have a GPU")
        if "{mode}" == "kill" and rank == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(20)  # the other rank: torchrun stops it once its peer failed

    main()
""")


def torchrun(tmp_path: Path, mode: str, workers: int):
    """Runs the worker module under the real torchrun, as point_job.py does: forked workers, stderr to a file, an
    error file."""
    (tmp_path / "failing_worker.py").write_text(WORKER.replace("{mode}", mode))
    err, error_file = tmp_path / "torchrun.err", tmp_path / "torchrun_error.json"
    env = {**os.environ, **FORK_ENV, "TORCHELASTIC_ERROR_FILE": str(error_file),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    with open(err, "w") as stderr:
        done = subprocess.run(torchrun_as_a_job_runs_it(workers, "failing_worker"), stderr=stderr,
                              stdout=subprocess.DEVNULL, env=env, timeout=120)
    return done.returncode, error_file, err


def test_a_worker_killed_by_a_signal_is_named_with_its_rank_and_signal(tmp_path):
    returncode, error_file, err = torchrun(tmp_path, "kill", 2)
    assert returncode != 0 and "=====" in err.read_text()  # torchrun's banner, which used to be the reason
    assert failure_reason(returncode, None, error_file, err) == "rank 1 killed by signal 9 (SIGKILL)"


def test_a_worker_raising_before_any_result_gives_its_exception_from_the_error_file(tmp_path):
    returncode, error_file, err = torchrun(tmp_path, "raise", 1)
    assert returncode != 0 and error_file.exists()
    assert failure_reason(returncode, None, error_file, err) == \
        "RuntimeError: Found no NVIDIA driver on your system."


def test_without_a_report_the_reason_is_the_last_line_that_says_something(tmp_path):
    err = tmp_path / "torchrun.err"
    err.write_text("Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: bad\n" + "=" * 40 + "\n")
    assert failure_reason(1, None, tmp_path / "none.json", err) == "ValueError: bad"
    assert failure_reason(-15, None, tmp_path / "none.json", tmp_path / "no.err") == \
        "torchrun killed by signal 15 (SIGTERM)"


def test_a_sweeps_worker_killed_with_sigkill_is_one_line_in_state_and_status_and_keeps_its_checkpoint(tmp_path):
    """Killed after its first epoch's checkpoint: the point fails with the signal as its reason, and checkpoint.pt
    stays for resume (issue 11, class 7; one launch proves both, issue 41: this was also test_provenance.py's)."""
    launch = start_launch(tmp_path, "experiment=tiny/train", "workload.epochs=200")
    try:
        sweep = wait_for(lambda: sweep_of(tmp_path) or launch.poll() is not None, 60, "the sweep folder")
        checkpoint = sweep / "points/0/checkpoint.pt"
        wait_for(lambda: checkpoint.exists() or launch.poll() is not None, 120, "the first epoch's checkpoint.pt")
        worker = wait_for(lambda: worker_pids(sweep) or launch.poll() is not None, 120, "the worker")
        assert launch.poll() is None, launch.communicate()
        os.kill(worker[0], signal.SIGKILL)
        out, err = launch.communicate(timeout=60)
    finally:
        if launch.poll() is None:
            os.killpg(launch.pid, signal.SIGKILL)
    assert launch.returncode == 1, out + err
    assert checkpoint.exists(), out + err  # kept for resume
    reason = "rank 0 killed by signal 9 (SIGKILL)"
    assert (state(sweep, 0)["state"], state(sweep, 0)["reason"]) == ("failed", reason)
    status = run_hpml(["status", str(sweep)], cwd=tmp_path).stdout
    assert status_rows(tmp_path, sweep) == [["0", "failed"]]
    assert status.splitlines()[-1].strip() == f"reason: {reason}", status
    assert "Root Cause" in (sweep / "points/0/logs/torchrun.node0.err").read_text()  # the whole report stays
    assert json.loads((sweep / "manifest.json").read_text())["points"][0]["job_id"]


def requeue_job(tmp_path: Path, scontrol_body: str):
    """A PointJob whose run() is interrupted by submitit's requeue (`scontrol requeue <id>` through check_call, as
    submitit's SlurmJobEnvironment._requeue runs it), with an `scontrol` on PATH that does what `scontrol_body`
    says; checkpoint() has written state "requeued" first, as submitit calls it before requeueing."""
    from hpml.conf.schema import ClusterKind
    from hpml.launcher.jobspec import JobSpec, ResourceShape
    from hpml.launcher.point_job import PointJob

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text(f"#!/bin/sh\n{scontrol_body}\n")
    (bin_dir / "scontrol").chmod(0o755)
    shape = ResourceShape(cluster=ClusterKind.slurm, nodes=1, workers_per_node=1, gpus_per_node=0, cpus_per_worker=1,
                          mem_gb=0, time_min=1)
    point = tmp_path / "points/0"
    point.mkdir(parents=True)

    class Interrupted(PointJob):
        def run(self) -> str:
            subprocess.check_call(["scontrol", "requeue", "343"], env={**os.environ, "PATH": str(bin_dir)})
            return "unreachable"

    job = Interrupted(JobSpec(point=0, point_dir=str(point), overrides=(), workload="train", shape=shape))
    job.checkpoint()
    return job, point


def test_a_requeue_killed_by_its_own_sigterm_keeps_the_point_requeued(tmp_path):
    """SLURM's requeue sends the job SIGTERM; on a loaded node it reached `scontrol requeue` before it exited, and
    the point was recorded failed while SLURM brought it back (seen in a CI run): the state stays "requeued"."""
    job, point = requeue_job(tmp_path, "kill -TERM $$")
    with pytest.raises(subprocess.CalledProcessError) as raised:  # the job still ends: SLURM brings it back
        job()
    assert raised.value.returncode == -signal.SIGTERM
    assert json.loads((point / "state.json").read_text())["state"] == "requeued"


def test_a_requeue_that_scontrol_refuses_is_a_failure_with_its_reason(tmp_path):
    job, point = requeue_job(tmp_path, "echo 'Requested operation is presently disabled' >&2; exit 1")
    with pytest.raises(subprocess.CalledProcessError) as raised:
        job()
    assert raised.value.returncode == 1
    state = json.loads((point / "state.json").read_text())
    assert state["state"] == "failed" and "scontrol" in state["reason"] and "requeue" in state["reason"]


# What slurmstepd wrote into a job's stderr on the test cluster when it killed the job over its --mem (accounting
# poll, JobAcctGatherParams=OverMemoryKill), and what an older cgroup plugin writes with a FAILED job.
ACCOUNTING_KILL = """slurmstepd-n1: error: *** STEP 2038.0 ON n1 CANCELLED AT 2026-11-27T09:04:19 ***
srun: Job step aborted: Waiting up to 7 seconds for job step to finish.
slurmstepd-n1: error: StepId=2038.0 exceeded memory limit (1494870016 > 1073741824), being killed
slurmstepd-n1: error: Exceeded job memory limit
srun: error: n1: task 0: Killed
"""
CGROUP_KILL = "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=997857.batch. Some of your processes may " \
              "have been killed by the cgroup out-of-memory handler.\n"


@pytest.mark.parametrize("text, line", [
    (ACCOUNTING_KILL, "slurmstepd-n1: error: StepId=2038.0 exceeded memory limit (1494870016 > 1073741824), being "
                      "killed"),
    (CGROUP_KILL, "slurmstepd: error: Detected 1 oom-kill event"),
    ("slurmstepd-n1: error: *** JOB 12 ON n1 CANCELLED AT 2026-11-27T09:04:19 ***\n", None),  # scancel: not memory
    ("Traceback ...\nMemoryError: exceeded memory limit (3 > 2), being killed\n", None),  # not slurmstepd's line
])
def test_slurmsteps_memory_kill_is_read_from_the_job_log(tmp_path, text, line):
    log = tmp_path / "12_0_log.err"
    log.write_text(text)
    assert memory_limit_kill(log) == line
    assert memory_limit_kill(tmp_path / "missing.err") is None
