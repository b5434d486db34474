"""The SLURM backend: one job array per resource shape, split at MaxArraySize (launcher/slurm.py writes and
submits them through submitit); states from one batched sacct call, squeue for jobs sacct does not know yet
(launcher/scheduler_state.py); the preflight asks the cluster (launcher/slurm_preflight.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from hpml.conf.schema import ClusterKind, HpmlConfig
from hpml.launcher import slurm, slurm_job_resources
from hpml.launcher.backends.base import Backend, JobStates
from hpml.launcher.errors import LaunchError
from hpml.launcher.grow import JobResources
from hpml.launcher.jobspec import JobSpec
from hpml.launcher.manifest import write_manifest
from hpml.launcher.scheduler_state import scheduler_states
from hpml.launcher.slurm_limits import Limit, submit_room
from hpml.launcher.slurm_preflight import preflight as slurm_preflight


class SlurmBackend(Backend):
    kind = ClusterKind.slurm
    runs_in_this_process = False

    def preflight(self, configs: Sequence[HpmlConfig], specs: Sequence[JobSpec]) -> List[str]:
        return slurm_preflight(list(specs))

    def submit(self, sweep_dir: Path, manifest: Dict, specs: Sequence[JobSpec], settings: HpmlConfig,
               on_tick: Callable[[], None]) -> None:
        cluster = settings.cluster
        parallel = cluster.max_parallel if cluster.array_parallelism is None else cluster.array_parallelism
        submit_to_slurm(sweep_dir, manifest, specs, parallel, cluster.max_requeues)

    def job_states(self, manifest: Dict) -> Optional[JobStates]:
        jobs, source = scheduler_states([p["job_id"] for p in manifest["points"] if p.get("job_id")])
        return jobs if source != "none" else None

    def job_log(self, sweep_dir: Path, job_id: str) -> Path:
        # the sbatch script's own stderr (its cluster.setup lines) and the first task's: one file
        return slurm.jobs_folder(sweep_dir).parent / job_id / f"{job_id}_0_log.err"

    def job_resources(self, job_ids: Dict[int, str], specs: Sequence[JobSpec]) -> Dict[int, JobResources]:
        return slurm_job_resources.job_resources(job_ids, specs)

    def runners(self, manifest: Dict) -> List[Dict]:
        return []  # a SLURM point's runner is its job, which the scheduler answers for


def submit_to_slurm(sweep_dir: Path, manifest: Dict, specs: Sequence[JobSpec], max_parallel: int,
                    max_requeues: int = slurm.MAX_REQUEUES_ON_TIMEOUT) -> None:
    """sbatch, one job array per shape (split at MaxArraySize). Each array's job ids go into the manifest as
    soon as sbatch returns, and its sbatch script into its points' folders. An sbatch refusal leaves the
    points it did not queue "not submitted" (`hpml resume` submits them) and becomes one LaunchError line."""
    config = slurm.scontrol_config()
    manifest["slurm_version"] = slurm.slurm_version()
    submissions: List[Dict] = manifest.setdefault("submissions", [])  # one entry per sbatch, every launch and resume
    new: List[Dict] = []

    def record(array: List[slurm.Submitted]) -> None:
        for item in array:
            entry = manifest["points"][item.spec.point]
            entry["job_id"], entry["array"] = item.job.job_id, item.array
            entry.pop("held_back", None)
        new.append({"job_id": array[0].job.job_id.split("_")[0], "shape": array[0].spec.shape.describe(),
                    "points": [item.spec.point for item in array]})
        submissions.append(new[-1])
        write_manifest(sweep_dir, manifest)
        slurm.keep_sbatch_scripts(array)

    limit = submit_room(config.get("ClusterName", ""), sorted({(s.shape.account, s.shape.qos) for s in specs},
                                                              key=str))
    max_jobs = None if limit is None or limit.room >= slurm.job_count(specs) else limit.room
    try:
        held = slurm.submit_arrays(sweep_dir, specs, max_parallel, slurm.max_array_size(config), on_array=record,
                                   max_requeues=max_requeues, max_jobs=max_jobs)
    except slurm.SbatchRefused as refused:
        queued = len(specs) - len(refused.points)
        raise LaunchError(f"sbatch refused point(s) {', '.join(map(str, refused.points))}: {refused.why} "
                          f"({queued} point(s) queued before); the sweep is kept: fix the cause, then "
                          f"`hpml resume {sweep_dir}` submits what is not queued") from refused
    ids = ", ".join(f"{a['job_id']} ({len(a['points'])} point(s))" for a in new)
    print(f"hpml: submitted job array(s) {ids or '(none)'}")
    if held:
        for point in held:  # `hpml status` shows it as the point's reason
            manifest["points"][point]["held_back"] = limit.describe()
        write_manifest(sweep_dir, manifest)
        print(held_back_line(held, limit, sweep_dir))


def held_back_line(held: Sequence[int], limit: Limit, sweep_dir: Path) -> str:
    """The one line that says which limit kept points back, and what to do."""
    return (f"hpml: {len(held)} point(s) not submitted: {limit.describe()}; run `hpml resume {sweep_dir}` "
            "later (as jobs leave the queue)")
