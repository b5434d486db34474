"""Many small points per job (cluster.points_per_job=K): one array task runs K points of one resource shape one
after another on its allocation, each through its own PointJob, so each keeps its own config, state.json,
result.json and logs/, and `hpml resume` reruns exactly the ones that did not complete.

A point that fails does not stop the ones after it; the job still exits non-zero when one failed, so the
scheduler does not call it COMPLETED (cf. hydra#1928). A stop signal (scancel, Ctrl-C) ends the whole job: the
point it hit records "interrupted" and the rest are left as they are (not started), as at the job's time limit
with no requeue left. After a requeue (time limit,
preemption) the job starts again and skips the points whose state.json already says completed.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Sequence

from hpml.contract.jsonio import read_json
from hpml.contract.sweep_layout import STATE_FILE
from hpml.launcher.jobspec import JobSpec
from hpml.launcher.point_job import INTERRUPTED, PointFailed, PointJob


def recorded_state(spec: JobSpec) -> object:
    state = read_json(Path(spec.point_dir) / STATE_FILE)
    return state.get("state") if isinstance(state, dict) else None


class PackedJob:
    """A picklable callable that submitit runs as one array task: the points of `specs`, in turn."""

    def __init__(self, specs: Sequence[JobSpec]):
        self.specs: List[JobSpec] = list(specs)

    def checkpoint(self, *args, **kwargs):
        """Time limit near or preemption: requeue the same pack; the completed points are skipped then."""
        import submitit

        for spec in self.specs:
            if recorded_state(spec) == "running":
                PointJob(spec).checkpoint()  # marks it requeued, as a job of one point does
        return submitit.helpers.DelayedSubmission(PackedJob(self.specs))

    def __call__(self) -> str:
        failed = []
        for spec in self.specs:
            if recorded_state(spec) == "completed":
                continue
            try:
                PointJob(spec)()
            except Exception as error:  # the point recorded why in its state.json; the next one runs
                failed.append(f"{spec.point} ({type(error).__name__})")
                if recorded_state(spec) in (INTERRUPTED, "timeout"):  # stopped from outside, or the job's time is
                    break  # up: the rest cannot run in this job
        if failed:
            raise PointFailed(f"{len(failed)} of {len(self.specs)} point(s) of this job did not complete: "
                              f"{', '.join(failed)}")
        return f"{len(self.specs)} point(s) completed"
