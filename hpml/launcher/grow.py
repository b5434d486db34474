"""`hpml resume --grow`: a point that ran out of memory or time is rerun with twice what its job had.

Pure: the point's state, the resources its last job had and the most the cluster allows in; the new values, or
the one line that says why it stops (tested on literal values in tests/test_grow.py). The cluster's side (what
a job had, the partition's MaxMemPerNode and MaxTime) is the backend's: Backend.job_resources.

What grows (docs/decisions.md, issue 35):
  out_of_memory  the scheduler killed the job for its host memory (SLURM's OUT_OF_MEMORY): resources.mem_gb x 2
  oom            the worker's allocator said out of memory (result.json status "oom"): where the worker ran on the
                 CPU (result.json environment.device) that is host memory, and resources.mem_gb doubles; on a CUDA
                 device it is the GPU's memory, which no sbatch option doubles: the point moves one rung up
                 cluster.gpu_ladder (node features ordered by GPU memory, e.g. [a100_40g, a100_80g, h200]), which
                 becomes its cluster.constraint; without a ladder, or at its top, it stops with one line
  timeout        the job reached its time limit (requeues exhausted): resources.time_min x 2
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple, Union

GROWS = {"out_of_memory": "mem_gb", "oom": "mem_gb", "timeout": "time_min"}


@dataclass(frozen=True)
class JobResources:
    """What a point's last job had, and the most its partition gives (None: no limit, or unknown)."""
    mem_mb: Optional[int]  # the job's memory per node (sacct ReqMem), None when unknown
    time_min: Optional[int]
    max_mem_mb: Optional[int]  # the partition's MaxMemPerNode, or its largest node's RealMemory
    max_time_min: Optional[float]  # the partition's MaxTime
    node_features: Tuple[str, ...] = ()  # the features of the nodes the job ran on (sacct NodeList, scontrol)


@dataclass(frozen=True)
class Growth:
    point: int
    key: Optional[str] = None  # resources.mem_gb | resources.time_min | cluster.constraint; None: not grown
    old: Union[int, str, None] = 0
    new: Union[int, str] = 0
    stop: Optional[str] = None  # why it is not rerun, one line

    def describe(self) -> str:
        if self.stop:
            return f"hpml: point {self.point} not resubmitted: {self.stop}"
        return f"hpml: point {self.point}: {self.key} {self.old} -> {self.new}"


def growth(point: int, state: str, mem_gb: int, time_min: int, gpus_per_node: int, attempts: int,
           max_attempts: int, had: JobResources, device: Optional[str] = None, constraint: Optional[str] = None,
           ladder: Sequence[str] = ()) -> Growth:
    """How point `point` (which ended in `state` after `attempts` runs) is rerun by --grow. device: where its worker
    ran (result.json environment.device; None when no result says, then a point holding GPUs counts as on one)."""
    key = GROWS.get(state)
    if key is None:
        return Growth(point)  # not a shortage of memory or time: rerun as it is
    if attempts >= max_attempts:
        return Growth(point, stop=f"{state} after {attempts} attempt(s): cluster.max_attempts={max_attempts} reached "
                                  "(raise it in the point's config.yaml, or change the point)")
    if state == "oom" and (device.startswith("cuda") if device else bool(gpus_per_node)):
        return up_the_ladder(point, constraint, tuple(ladder), had.node_features)
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


def up_the_ladder(point: int, constraint: Optional[str], ladder: Tuple[str, ...],
                  node_features: Tuple[str, ...]) -> Growth:
    """CUDA out of memory: the next rung of cluster.gpu_ladder above the one the point ran on (its constraint when
    that is a rung, else the highest rung among the features of the nodes its job ran on)."""
    if not ladder:
        return Growth(point, stop="CUDA out of memory: a GPU's memory is not something sbatch can double; list node "
                                  "features by GPU memory in cluster.gpu_ladder (e.g. [a100_40g,a100_80g]) for "
                                  "--grow to move it up, or lower the batch size, then `hpml resume`")
    rungs = [i for i, rung in enumerate(ladder) if rung == constraint or (constraint is None and rung in node_features)]
    if not rungs:
        ran_on = f"cluster.constraint={constraint}" if constraint else (
            f"nodes with features {', '.join(node_features)}" if node_features else "nodes of unknown features")
        return Growth(point, stop=f"CUDA out of memory on {ran_on}, no rung of cluster.gpu_ladder="
                                  f"[{','.join(ladder)}]: set cluster.constraint to the rung it needs, then "
                                  "`hpml resume`")
    rung = max(rungs)
    if rung == len(ladder) - 1:
        return Growth(point, stop=f"CUDA out of memory on {ladder[rung]}, the top of cluster.gpu_ladder: lower the "
                                  "batch size (or shard the model), then `hpml resume`")
    return Growth(point, key="cluster.constraint", old=constraint or ladder[rung], new=ladder[rung + 1])


def capped(point: int, key: str, old: int, new: int, cap: Optional[int], unit: str) -> Growth:
    """new, or the partition's limit when new is above it; a stop line when old is at the limit already."""
    if cap is not None and new > cap:
        if old >= cap:
            return Growth(point, stop=f"{key}={old} is at the partition's limit of {cap} {unit}")
        new = cap
    return Growth(point, key=key, old=old, new=new)
