"""What runs on the allocation: one task per node, each starting torchrun for the sweep point.

The node-0 task keeps the point's state.json (running, then completed or failed with the reason). A failed
point raises, so the scheduler records the job as FAILED rather than COMPLETED (cf. hydra#1928).
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path
from typing import Optional

from contract.jsonio import read_json, utc_now, write_json_atomic
from contract.sweep_layout import LOGS_DIR, RESULT_FILE, STATE_FILE
from launcher.jobspec import JobSpec
from launcher.torchrun import Rendezvous, slurm_rendezvous, torchrun_command

STDERR_TAIL_LINES = 20


class PointFailed(RuntimeError):
    """The point's workers failed; the message is the reason shown by `hpml status`."""


def stderr_tail(path: Path, lines: int = STDERR_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace").rstrip().splitlines()
    except OSError:
        return "(no stderr)"
    return "\n".join(text[-lines:])


def job_identity() -> dict:
    """Scheduler facts about this task (submitit's view, plus SLURM's own variables when present)."""
    info = {"host": socket.gethostname()}
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
        return env

    def __call__(self) -> str:
        try:
            return self.run()
        except PointFailed:
            raise
        except Exception as error:  # the job itself broke (not the workload): record why, then fail
            if job_identity()["node"] == 0:
                write_json_atomic(Path(self.spec.point_dir) / STATE_FILE, {
                    "state": "failed", "reason": f"{type(error).__name__}: {error}", "ended_at": utc_now(),
                    **job_identity()})
            raise

    def run(self) -> str:
        point_dir = Path(self.spec.point_dir)
        ident = job_identity()
        node = ident["node"]
        logs = point_dir / LOGS_DIR
        logs.mkdir(parents=True, exist_ok=True)
        state_path = point_dir / STATE_FILE
        if node == 0:
            write_json_atomic(state_path, {"state": "running", "started_at": utc_now(), **ident})
        out_path, err_path = logs / f"torchrun.node{node}.out", logs / f"torchrun.node{node}.err"
        command = torchrun_command(self.spec, self.rendezvous())
        with open(out_path, "a") as out, open(err_path, "a") as err:  # append: a requeued job adds to it
            out.write(f"$ {' '.join(command)}\n")
            out.flush()
            returncode = subprocess.run(command, stdout=out, stderr=err, env=self.environment()).returncode
        result = read_json(point_dir / RESULT_FILE) or {}
        ok = returncode == 0 and result.get("status") == "ok"
        if node == 0:
            reason = None if ok else (result.get("reason") or stderr_tail(err_path))
            write_json_atomic(state_path, {
                "state": "completed" if ok else (result.get("status") or "failed"),
                "reason": reason, "returncode": returncode,
                "started_at": (read_json(state_path) or {}).get("started_at"), "ended_at": utc_now(), **ident})
        if not ok:
            raise PointFailed(f"point {self.spec.point} failed (torchrun exit {returncode}): "
                              f"{result.get('reason') or stderr_tail(err_path, 5)}")
        return str(point_dir / RESULT_FILE)
