"""The SLURM backend: one job array per resource shape, split at MaxArraySize (launcher/backends/slurm/submit.py writes and
submits them through submitit); states from one squeue call, sacct only for jobs that left the queue
(launcher/backends/slurm/states.py); the preflight asks the cluster (launcher/backends/slurm/preflight.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from hpml.conf.schema import ClusterKind, HpmlConfig
from hpml.launcher.backends.base import Backend, JobStates
from hpml.launcher.backends.slurm import energy as slurm_energy
from hpml.launcher.backends.slurm import job_resources as slurm_job_resources
from hpml.launcher.backends.slurm import submit as slurm
from hpml.launcher.backends.slurm.limits import Limit, submit_room
from hpml.launcher.backends.slurm.preflight import preflight as slurm_preflight
from hpml.launcher.backends.slurm.preflight import scontrol_records
from hpml.launcher.backends.slurm.report_job import REPORT_KEY, queue_report_job, report_line, report_problems
from hpml.launcher.backends.slurm.states import scheduler_states, scheduler_text
from hpml.launcher.errors import LaunchError
from hpml.launcher.grow import JobResources
from hpml.launcher.jobspec import JobSpec
from hpml.launcher.manifest import write_manifest


class SlurmBackend(Backend):
    kind = ClusterKind.slurm
    runs_in_this_process = False
    runs_on_this_host = False
    packs_points = True

    def preflight(self, configs: Sequence[HpmlConfig], specs: Sequence[JobSpec]) -> List[str]:
        problems = slurm_preflight(list(specs))
        settings = configs[0] if configs else None
        # the report job's partition and time limit matter where one is queued (nobody waits), or where the user
        # named its partition: a waiting launch on a partition shorter than report_time_min is not refused
        if problems or settings is None or (settings.sweep.wait and not settings.cluster.report_partition):
            return problems
        return report_problems(settings.cluster, scontrol_records("partition"))

    def submit(self, sweep_dir: Path, manifest: Dict, specs: Sequence[JobSpec], settings: HpmlConfig,
               on_tick: Callable[[], None]) -> None:
        cluster = settings.cluster
        parallel = cluster.max_parallel if cluster.array_parallelism is None else cluster.array_parallelism
        submit_to_slurm(sweep_dir, manifest, specs, parallel, cluster.max_requeues)

    def job_states(self, manifest: Dict) -> Optional[JobStates]:
        ids = [p["job_id"] for p in manifest["points"] if p.get("job_id")]
        report = manifest.get(REPORT_KEY)
        if isinstance(report, dict) and isinstance(report.get("job_id"), str):
            ids.append(report["job_id"])  # in the same squeue call as the points
        jobs, source = scheduler_states(ids)
        return jobs if source != "none" else None

    def job_log(self, sweep_dir: Path, job_id: str) -> Path:
        # the sbatch script's own stderr (its cluster.setup lines) and the first task's: one file
        return slurm.jobs_folder(sweep_dir).parent / job_id / f"{job_id}_0_log.err"

    def queue_report(self, sweep_dir: Path, manifest: Dict, settings: HpmlConfig) -> None:
        queue_report_job(sweep_dir, manifest, settings.cluster)

    def has_report_job(self, manifest: Dict) -> bool:
        return bool(manifest.get(REPORT_KEY))

    def report_line(self, manifest: Dict, jobs: Optional[JobStates]) -> Optional[str]:
        return report_line(manifest, jobs)

    def job_resources(self, job_ids: Dict[int, str], specs: Sequence[JobSpec]) -> Dict[int, JobResources]:
        return slurm_job_resources.job_resources(job_ids, specs)

    def runners(self, manifest: Dict) -> List[Dict]:
        return []  # a SLURM point's runner is its job, which the scheduler answers for

    def record_accounting(self, sweep_dir: Path, manifest: Dict, ended: Dict[int, str]) -> None:
        """sacct's ConsumedEnergy of the ended jobs not recorded yet (launcher/backends/slurm/energy.py): one sacct call."""
        missing = slurm_energy.not_recorded(sweep_dir, ended)
        if not missing:
            return
        plugin = manifest.get("acct_gather_energy_type")
        if plugin is None:  # sweeps submitted before hpml kept it
            plugin = scheduler_text(["scontrol", "show", "config"])
            plugin = slurm.parse_key_values(plugin).get(slurm_energy.ENERGY_PLUGIN_KEY) if plugin else None
        slurm_energy.record(sweep_dir, missing, plugin,
                            scheduler_text(slurm_energy.sacct_energy_command(sorted(set(missing.values())))))


def submit_to_slurm(sweep_dir: Path, manifest: Dict, specs: Sequence[JobSpec], max_parallel: int,
                    max_requeues: int = slurm.MAX_REQUEUES_ON_TIMEOUT) -> None:
    """sbatch, one job array per shape (split at MaxArraySize). Each array's job ids go into the manifest as
    soon as sbatch returns, and its sbatch script into its points' folders. An sbatch refusal leaves the
    points it did not queue "not submitted" (`hpml resume` submits them) and becomes one LaunchError line."""
    config = slurm.scontrol_config()
    manifest["slurm_version"] = slurm.slurm_version()
    manifest["acct_gather_energy_type"] = config.get(slurm_energy.ENERGY_PLUGIN_KEY)  # whether sacct has energy
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
