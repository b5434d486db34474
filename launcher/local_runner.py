"""The local runner: a sweep's points as processes on this machine, through submitit's LocalExecutor.

At most cluster.max_parallel points run at a time (1 by default, so the timings of one point are not
disturbed by another); the launch waits until all have run. (The SLURM counterpart: launcher/slurm.py.)
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Dict, Sequence

import submitit

from contract.sweep_layout import JOBS_DIR
from launcher.jobspec import JobSpec, ResourceShape, group_by_shape
from launcher.point_job import PointJob


def local_executor(folder: Path, shape: ResourceShape) -> submitit.LocalExecutor:
    executor = submitit.LocalExecutor(folder=str(folder))
    executor.update_parameters(timeout_min=shape.time_min, gpus_per_node=shape.gpus_per_node,
                               tasks_per_node=1)  # one task per node: it runs torchrun
    return executor


def run_local(sweep_dir: Path, specs: Sequence[JobSpec], max_parallel: int, poll_s: float,
              on_submit: Callable[[JobSpec, str, int], None], on_tick: Callable[[], None]) -> Dict[int, submitit.Job]:
    """Runs the points on this machine, max_parallel at a time, in point order; returns when all are done.

    on_submit(spec, job_id, array) records each submission; on_tick() is called once per poll (progress).
    """
    array_of = {spec.point: array for array, (_, group) in enumerate(group_by_shape(specs)) for spec in group}
    queue = sorted(specs, key=lambda spec: spec.point)
    for spec in queue:
        if spec.shape.nodes != 1:
            raise ValueError(f"point {spec.point}: the local cluster has one node; "
                             f"resources.nodes={spec.shape.nodes} needs cluster=slurm")
    cap = max_parallel or len(queue)
    jobs: Dict[int, submitit.Job] = {}
    while True:
        running = sum(not job.done() for job in jobs.values())
        while queue and running < cap:
            spec = queue.pop(0)
            job = local_executor(sweep_dir / JOBS_DIR, spec.shape).submit(PointJob(spec))
            jobs[spec.point] = job
            on_submit(spec, job.job_id, array_of[spec.point])
            running += 1
        on_tick()
        if not queue and running == 0:
            return jobs
        time.sleep(poll_s)
