"""What runs on the allocation: one task per node, each starting torchrun for the sweep point.

The node-0 task keeps the point's state.json: running (with the host and pid of this task, so that status can
tell a point whose task is gone), then completed, failed with the root cause in one line, or interrupted.

torchrun runs in a session of its own, so a Ctrl-C in the terminal reaches this task and not torchrun: this
task alone decides to stop it (SIGTERM, once; torchrun stops its workers) and records the point as
interrupted rather than failed. torchrun dies with this task (PR_SET_PDEATHSIG), so a SIGKILL of the
launcher's process group leaves no torchrun behind, and torchrun's workers die with torchrun (worker.py).
A failed point raises, so the scheduler records the job as FAILED rather than COMPLETED (cf. hydra#1928).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
from pathlib import Path
from typing import Iterator, Optional

from hpml.contract.jsonio import read_json, utc_now, write_json_atomic
from hpml.contract.result_format import reason_line
from hpml.contract.sweep_layout import LOGS_DIR, RESULT_FILE, STATE_FILE
from hpml.launcher.failure_reason import failure_reason, signal_name
from hpml.launcher.jobspec import JobSpec
from hpml.launcher.torchrun import (
    FORK_ENV,
    Rendezvous,
    die_with_parent,
    slurm_rendezvous,
    torchrun_command,
    workers_forkable,
)

# Ctrl-C (SIGINT), a kill or scancel (SIGTERM), a closed terminal (SIGHUP): stop the point, record why.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
INTERRUPTED = "interrupted"  # the state word launcher/status.py counts as finished and resume reruns


class PointFailed(RuntimeError):
    """The point's workers failed; the message is the reason shown by `hpml status`."""


def job_identity() -> dict:
    """Scheduler facts about this task (submitit's view, plus SLURM's own variables when present)."""
    info = {"host": socket.gethostname(), "pid": os.getpid()}
    try:
        import submitit

        env = submitit.JobEnvironment()
        info.update(job_id=env.job_id, node=env.node, num_nodes=env.num_nodes)
    except RuntimeError:  # not inside a submitit job (e.g. called directly in a test)
        info.update(job_id=None, node=0, num_nodes=1)
    for key in ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_JOB_NODELIST"):
        if key in os.environ:
            info[key.lower()] = os.environ[key]
    return info


def interrupted_reason(signum: int) -> str:
    return f"interrupted by {signal_name(signum)}; `hpml resume` reruns it"


class StopRequest:
    """Records the first stop signal and passes it on to torchrun as SIGTERM, once: a second Ctrl-C must not
    cut short torchrun's own shutdown of its workers."""

    def __init__(self) -> None:
        self.signum: Optional[int] = None
        self.child: Optional[subprocess.Popen] = None

    def __call__(self, signum: int, frame: object = None) -> None:
        if self.signum is None:
            self.signum = signum
            self.stop_child()

    def stop_child(self) -> None:
        if self.child is not None and self.child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.child.send_signal(signal.SIGTERM)

    @contextlib.contextmanager
    def installed(self) -> Iterator["StopRequest"]:
        previous = {sig: signal.signal(sig, self) for sig in STOP_SIGNALS}
        # The local runner starts this job with SIGINT and SIGHUP blocked (launcher/backends/local/runner.py), so that
        # submitit's controller ignores them; this job is the one that must react, and torchrun inherits the mask.
        mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        try:
            yield self
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def requeue_under_way(error: BaseException) -> bool:
    """submitit's `scontrol requeue` of this job killed by the SIGTERM (or, after KillWait, SIGKILL) that the
    requeue itself sends the job: on a loaded node it can arrive before scontrol exits, and submitit then raises
    from its signal handler. SLURM is requeueing the job: its state.json keeps "requeued", where "failed" would
    make `hpml status` (which trusts the point's files over the scheduler) report a point that is coming back."""
    return (isinstance(error, subprocess.CalledProcessError) and isinstance(error.cmd, (list, tuple))
            and list(error.cmd[:2]) == ["scontrol", "requeue"]
            and error.returncode in (-signal.SIGTERM, -signal.SIGKILL))


def out_of_requeues(error: BaseException) -> bool:
    """submitit's answer to the time-limit signal when no requeue is left (cluster.max_requeues): it raises
    UncompletedJobError("Job not requeued because: timed-out too many times.") and the job ends FAILED. The point
    ran out of time, which `hpml resume --grow` doubles: its state says timeout, not failed."""
    return type(error).__name__ == "UncompletedJobError" and "timed-out" in str(error)


class PointJob:
    """A picklable callable that submitit runs on each node of the point's allocation."""

    def __init__(self, spec: JobSpec):
        self.spec = spec

    def checkpoint(self, *args, **kwargs):
        """submitit calls this on SIGUSR2 (time limit near, or preemption) and requeues what it returns:
        the same point, whose workload resumes from its last epoch checkpoint."""
        import submitit

        if job_identity()["node"] == 0:
            write_json_atomic(Path(self.spec.point_dir) / STATE_FILE,
                              {"state": "requeued", "reason": "time limit or preemption signal",
                               "at": utc_now(), **job_identity()})
        return submitit.helpers.DelayedSubmission(PointJob(self.spec))

    def rendezvous(self) -> Optional[Rendezvous]:
        if self.spec.shape.nodes == 1:
            return None
        return slurm_rendezvous(os.environ)

    def environment(self) -> dict:
        env = dict(os.environ)
        # torchrun sets OMP_NUM_THREADS=1 only when it starts several workers; set it always, so a
        # 1-worker point gets the same threads per worker as an N-worker one.
        env["OMP_NUM_THREADS"] = str(self.spec.shape.cpus_per_worker)
        env["PYTHONUNBUFFERED"] = "1"
        # `python -m` puts the current folder (the user's project) first on sys.path: Python 3.11+ skips it with
        # PYTHONSAFEPATH, so a user's folder named like a library the workers import (torch, numpy, ...) is not
        # imported instead. hpml's own modules are safe anyway: they live under the hpml name (issue 32).
        env["PYTHONSAFEPATH"] = "1"
        return env

    def __call__(self) -> str:
        try:
            return self.run()
        except PointFailed:
            raise
        except Exception as error:  # the job itself broke (not the workload): record why, then fail
            if job_identity()["node"] == 0 and not requeue_under_way(error):
                write_json_atomic(Path(self.spec.point_dir) / STATE_FILE, {
                    "state": "timeout" if out_of_requeues(error) else "failed",
                    "reason": reason_line(f"{type(error).__name__}: {error}"), "ended_at": utc_now(), **job_identity()})
            raise

    def run(self) -> str:
        point_dir = Path(self.spec.point_dir)
        ident = job_identity()
        node = ident["node"]
        logs = point_dir / LOGS_DIR
        logs.mkdir(parents=True, exist_ok=True)
        state_path = point_dir / STATE_FILE
        started_at = utc_now()
        if node == 0:
            write_json_atomic(state_path, {"state": "running", "started_at": started_at, **ident})
        out_path, err_path = logs / f"torchrun.node{node}.out", logs / f"torchrun.node{node}.err"
        error_file = logs / f"torchrun_error.node{node}.json"
        error_file.unlink(missing_ok=True)  # torchrun refuses to overwrite an earlier attempt's file
        with StopRequest().installed() as stop:
            returncode = self.run_torchrun(out_path, err_path, error_file, stop)
        result = read_json(point_dir / RESULT_FILE)
        result = result if isinstance(result, dict) else {}  # absent or damaged: not a result
        ok = returncode == 0 and result.get("status") == "ok" and stop.signum is None
        if stop.signum is not None:
            state, reason = INTERRUPTED, interrupted_reason(stop.signum)
        elif ok:
            state, reason = "completed", None
        else:
            state = result.get("status") if result.get("status") in ("failed", "oom", "timeout") else "failed"
            reason = failure_reason(returncode, result.get("reason"), error_file, err_path)
        if node == 0:
            write_json_atomic(state_path, {
                "state": state, "reason": reason, "returncode": returncode,
                "started_at": started_at, "ended_at": utc_now(), **ident})
        if not ok:
            raise PointFailed(f"point {self.spec.point} {state}: {reason}")
        return str(point_dir / RESULT_FILE)

    def run_torchrun(self, out_path: Path, err_path: Path, error_file: Path, stop: StopRequest) -> int:
        """torchrun's exit status (-N: killed by signal N); 130 when a stop signal came before it started."""
        fork = workers_forkable(self.spec.shape.gpus_per_node)
        command = torchrun_command(self.spec, self.rendezvous(), fork=fork)
        env = self.environment()
        if fork:
            env.update(FORK_ENV)
        env["TORCHELASTIC_ERROR_FILE"] = str(error_file)  # the first failed worker's exception, as JSON
        with open(out_path, "a") as out, open(err_path, "a") as err:  # append: a requeued job adds to it
            out.write(f"$ {' '.join(command)}\n")
            out.flush()
            if stop.signum is not None:
                return 128 + stop.signum
            stop.child = subprocess.Popen(command, stdout=out, stderr=err, env=env, start_new_session=True,
                                          preexec_fn=die_with_parent(signal.SIGTERM, ignored=(signal.SIGUSR2,)))
            if stop.signum is not None:  # the signal came while torchrun was being started
                stop.stop_child()
            return stop.child.wait()
