"""Sweep point -> JobSpec, and JobSpecs -> job arrays. Pure: no I/O, no Hydra, no submitit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, List, Sequence, Tuple

from hpml.contract.sweep_layout import CONFIG_FILE

if TYPE_CHECKING:  # annotations only: a point's job (submitit's task) unpickles this module without the schema
    from hpml.conf.schema import ClusterKind, HpmlConfig


@dataclass(frozen=True)
class ResourceShape:
    """Everything the scheduler sees of a point. Points with equal shapes go into one job array."""

    cluster: ClusterKind
    nodes: int
    workers_per_node: int
    gpus_per_node: int
    cpus_per_worker: int
    mem_gb: int
    time_min: int
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    constraint: str | None = None
    exclusive: bool = False
    sbatch_extra: Tuple[Tuple[str, str], ...] = ()
    setup: Tuple[str, ...] = ()
    srun_args: Tuple[str, ...] = ()
    points_per_job: int = 1  # sweep points run in turn by one array task (cluster.points_per_job)
    gpu_ladder: Tuple[str, ...] = ()  # node features by GPU memory (cluster.gpu_ladder): each must exist

    @property
    def world_size(self) -> int:
        return self.nodes * self.workers_per_node

    @property
    def cpus_per_task(self) -> int:
        """One task per node runs torchrun, so a task needs the CPUs of all its workers."""
        return self.workers_per_node * self.cpus_per_worker

    @property
    def job_time_min(self) -> int:
        """The job's time limit: resources.time_min is one point's, and a packed job runs its points in turn."""
        return self.time_min * self.points_per_job

    def describe(self) -> str:
        gpus = f", {self.gpus_per_node} GPU/node" if self.gpus_per_node else ""
        packed = f", {self.points_per_job} points/job" if self.points_per_job > 1 else ""
        return f"{self.nodes} node(s) x {self.workers_per_node} worker(s){gpus}, {self.time_min} min{packed}"


@dataclass(frozen=True)
class JobSpec:
    """One sweep point, ready to submit: where it lives, what it runs, what it needs."""

    point: int
    point_dir: str  # absolute; holds config.yaml, result.json, state.json and logs/
    overrides: Tuple[str, ...]  # the Hydra overrides that make this point, as typed
    workload: str  # module run by torchrun: workloads.<workload>
    shape: ResourceShape

    @property
    def config_path(self) -> str:
        return f"{self.point_dir}/{CONFIG_FILE}"


def shape_of(config: HpmlConfig) -> ResourceShape:
    res, cl = config.resources, config.cluster
    return ResourceShape(
        cluster=cl.kind,
        nodes=res.nodes,
        workers_per_node=res.workers_per_node,
        gpus_per_node=res.gpus_per_node,
        cpus_per_worker=res.cpus_per_worker,
        mem_gb=res.mem_gb,
        time_min=res.time_min,
        partition=cl.partition,
        account=cl.account,
        qos=cl.qos,
        constraint=cl.constraint,
        exclusive=cl.exclusive,
        sbatch_extra=tuple(sorted(cl.sbatch_extra.items())),
        setup=tuple(cl.setup),
        srun_args=tuple(cl.srun_args),
        points_per_job=cl.points_per_job,
        gpu_ladder=tuple(cl.gpu_ladder),
    )


def jobspec_of(config: HpmlConfig, point: int, point_dir: str, overrides: Sequence[str]) -> JobSpec:
    return JobSpec(point=point, point_dir=point_dir, overrides=tuple(overrides),
                   workload=config.workload.name, shape=shape_of(config))


def group_by_shape(specs: Sequence[JobSpec]) -> List[Tuple[ResourceShape, List[JobSpec]]]:
    """Groups points into job arrays, one per resource shape, in order of each shape's first point."""
    groups: Dict[ResourceShape, List[JobSpec]] = {}
    for spec in sorted(specs, key=lambda s: s.point):
        groups.setdefault(spec.shape, []).append(spec)
    return list(groups.items())
