"""`hpml resume --grow`: a point that ran out of memory or time is rerun with twice what its job had.

Pure: the point's state, the resources its last job had and the most the cluster allows in; the new values, or
the one line that says why it stops (tested on literal values in tests/test_grow.py). The cluster's side (what
a job had, the partition's MaxMemPerNode and MaxTime) is the backend's: Backend.job_resources.

What grows (docs/decisions.md, issue 35):
  out_of_memory  the scheduler killed the job for its host memory (SLURM's OUT_OF_MEMORY): resources.mem_gb x 2
  oom            the worker's allocator said out of memory (result.json status "oom"): on a CPU point that is host
                 memory, and resources.mem_gb doubles; on a GPU point it is CUDA memory, which no sbatch option
                 doubles, so it stops with one line saying what would help
  timeout        the job reached its time limit (requeues exhausted): resources.time_min x 2
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

GROWS = {"out_of_memory": "mem_gb", "oom": "mem_gb", "timeout": "time_min"}


@dataclass(frozen=True)
class JobResources:
    """What a point's last job had, and the most its partition gives (None: no limit, or unknown)."""
    mem_mb: Optional[int]  # the job's memory per node (sacct ReqMem), None when unknown
    time_min: Optional[int]
    max_mem_mb: Optional[int]  # the partition's MaxMemPerNode, or its largest node's RealMemory
    max_time_min: Optional[float]  # the partition's MaxTime


@dataclass(frozen=True)
class Growth:
    point: int
    key: Optional[str] = None  # resources.mem_gb | resources.time_min; None: not grown
    old: int = 0
    new: int = 0
    stop: Optional[str] = None  # why it is not rerun, one line

    def describe(self) -> str:
        if self.stop:
            return f"hpml: point {self.point} not resubmitted: {self.stop}"
        return f"hpml: point {self.point}: {self.key} {self.old} -> {self.new}"


def growth(point: int, state: str, mem_gb: int, time_min: int, gpus_per_node: int, attempts: int,
           max_attempts: int, had: JobResources) -> Growth:
    """How point `point` (which ended in `state` after `attempts` runs) is rerun by --grow."""
    key = GROWS.get(state)
    if key is None:
        return Growth(point)  # not a shortage of memory or time: rerun as it is
    if attempts >= max_attempts:
        return Growth(point, stop=f"{state} after {attempts} attempt(s): cluster.max_attempts={max_attempts} reached "
                                  "(raise it in the point's config.yaml, or change the point)")
    if state == "oom" and gpus_per_node:
        return Growth(point, stop="CUDA out of memory: a GPU's memory is not something sbatch can double; ask for a "
                                  "GPU with more memory (cluster.constraint, sbatch_extra gres type) or lower the "
                                  "batch size, then `hpml resume`")
    if key == "mem_gb":
        old_mb = mem_gb * 1024 if mem_gb else had.mem_mb
        if not old_mb:
            return Growth(point, stop="resources.mem_gb=0 and the job's memory is unknown: set resources.mem_gb")
        new = math.ceil(2 * old_mb / 1024)
        cap = had.max_mem_mb // 1024 if had.max_mem_mb else None
        return capped(point, "resources.mem_gb", mem_gb or math.ceil(old_mb / 1024), new, cap,
                      "GB per node (the partition's MaxMemPerNode or its largest node)")
    cap_time = int(had.max_time_min) if had.max_time_min is not None else None
    return capped(point, "resources.time_min", time_min, 2 * time_min, cap_time, "minutes (the partition's MaxTime)")


def capped(point: int, key: str, old: int, new: int, cap: Optional[int], unit: str) -> Growth:
    """new, or the partition's limit when new is above it; a stop line when old is at the limit already."""
    if cap is not None and new > cap:
        if old >= cap:
            return Growth(point, stop=f"{key}={old} is at the partition's limit of {cap} {unit}")
        new = cap
    return Growth(point, key=key, old=old, new=new)
