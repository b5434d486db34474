"""SLURM submission: one submitit job array per resource shape, split to the cluster's MaxArraySize.

Each array task is one sweep point: `nodes` tasks (one per node) each running torchrun. The point numbers
of the sweep are kept whatever the split: the manifest maps each point to its array job id and index.
(The local counterpart is launcher/backends/local/runner.py; the checks before submitting: launcher/backends/slurm/preflight.py.)
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Tuple

from hpml.contract.sweep_layout import JOBS_DIR
from hpml.launcher.backends.slurm.requests import gpu_request
from hpml.launcher.child_python import python_shell
from hpml.launcher.jobspec import JobSpec, ResourceShape, group_by_shape
from hpml.launcher.packed_job import PackedJob
from hpml.launcher.point_job import PointJob

if TYPE_CHECKING:  # imported where a job is submitted: a refused or dry-run launch never needs it (issue 41)
    import submitit

# SIGUSR2 this long before the time limit: PointJob.checkpoint() then requeues the point, which resumes
# from its last epoch checkpoint.
SIGNAL_DELAY_S = 30
MAX_REQUEUES_ON_TIMEOUT = 3  # cluster.max_requeues' default (submitit's)
DEFAULT_MAX_ARRAY_SIZE = 1001  # SLURM's default MaxArraySize


def parse_key_values(text: str) -> Dict[str, str]:
    """`scontrol show config` ("Key = Value" per line) -> {key: value}."""
    config = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            config[key.strip()] = value.strip()
    return config


def scontrol_config() -> Dict[str, str]:
    text = subprocess.run(["scontrol", "show", "config"], check=True, capture_output=True, text=True).stdout
    return parse_key_values(text)


def max_array_size(config: Dict[str, str]) -> int:
    """MaxArraySize: the largest index is MaxArraySize - 1, so an array holds at most this many tasks."""
    return int(config.get("MaxArraySize", str(DEFAULT_MAX_ARRAY_SIZE)))


def slurm_version() -> str:
    """`sinfo --version` as it prints it (e.g. "slurm 23.11.4"), kept in the manifest."""
    return subprocess.run(["sinfo", "--version"], check=True, capture_output=True, text=True).stdout.strip()


def chunks(specs: Sequence[JobSpec], size: int) -> List[List[JobSpec]]:
    return [list(specs[i:i + size]) for i in range(0, len(specs), size)]


def jobs_folder(sweep_dir: Path) -> Path:
    """submitit's folder for a sweep's jobs: <sweep>/jobs/<job id>/ (pickles, sbatch script, logs)."""
    return Path(sweep_dir) / JOBS_DIR / "%j"


def guarded_setup(lines: Sequence[str]) -> List[str]:
    """cluster.setup's lines, each followed by a check of its exit status: a failed line (a module that does not
    exist, an environment that does not activate) ends the job at once with one line on its stderr, which
    becomes the point's reason (`hpml status`). Without it the script went on to run the point in a broken
    environment. A check of its own after each line, not `set -e`, which would also stop on a command of the
    user's that is allowed to fail inside an `if` or `||` (set -e ignores those; a check of $? sees the line's
    own status the same way)."""
    guarded = []
    for index, line in enumerate(lines):
        guarded += [line, f"hpml_status=$?; if [ $hpml_status -ne 0 ]; then printf 'hpml: cluster.setup[{index}] "
                          f"failed with exit status %d: %s\\n' $hpml_status {shlex.quote(line)} >&2; exit 1; fi"]
    return guarded


def executor_parameters(shape: ResourceShape, max_parallel: int) -> Dict:
    """submitit SlurmExecutor parameters for a shape (values were checked by the schema: no shell)."""
    params: Dict = dict(
        nodes=shape.nodes,
        ntasks_per_node=1,  # one task per node runs torchrun, which starts the workers
        cpus_per_task=shape.cpus_per_task,
        time=shape.job_time_min,
        signal_delay_s=SIGNAL_DELAY_S,
        setup=guarded_setup(shape.setup),
        srun_args=list(shape.srun_args),
        job_name="hpml",
    )
    # A GPU request of the user's own in sbatch_extra (a typed --gres=gpu:a100:4) replaces hpml's untyped
    # --gpus-per-node; the preflight made sure both ask for the same count (launcher/backends/slurm/preflight.py).
    if shape.gpus_per_node and gpu_request(shape) is None:
        params["gpus_per_node"] = shape.gpus_per_node
    if shape.mem_gb:
        params["mem"] = f"{shape.mem_gb}G"
    if max_parallel:
        params["array_parallelism"] = max_parallel
    for key in ("partition", "account", "qos", "constraint"):
        if getattr(shape, key):
            params[key] = getattr(shape, key)
    if shape.exclusive:
        params["exclusive"] = True
    if shape.sbatch_extra:
        params["additional_parameters"] = dict(shape.sbatch_extra)
    return params


@contextlib.contextmanager
def outside_of_any_job():
    """A launch from inside a job must not pass that job's SLURM_* variables on (submitit's clean_env),
    but SLURM_CONF says which cluster to talk to and must stay."""
    import submitit.helpers

    slurm_conf = os.environ.get("SLURM_CONF")
    with submitit.helpers.clean_env():
        if slurm_conf:
            os.environ["SLURM_CONF"] = slurm_conf
        yield


@dataclass
class Submitted:
    spec: JobSpec
    job: submitit.Job
    array: int


class SbatchRefused(Exception):
    """sbatch said no to one array: `points` were not submitted (the arrays before it were), `why` is sbatch's
    own first error line."""

    def __init__(self, points: Sequence[int], why: str):
        super().__init__(why)
        self.points, self.why = list(points), why


def sbatch_reason(error: BaseException) -> str:
    """sbatch's message, one line: 'sbatch: error: Batch job submission failed: Invalid feature
    specification' -> 'Invalid feature specification'."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    failed = [line for line in lines if "submission failed" in line] or lines or [type(error).__name__]
    return failed[-1].split("submission failed:", 1)[-1].replace("sbatch: error:", "").strip()


def job_units(specs: Sequence[JobSpec]) -> List[Tuple[ResourceShape, List[List[JobSpec]]]]:
    """Per resource shape, its array tasks: each the points one task runs (cluster.points_per_job of them)."""
    return [(shape, chunks(group, shape.points_per_job)) for shape, group in group_by_shape(specs)]


def job_count(specs: Sequence[JobSpec]) -> int:
    """How many jobs (array tasks) the points make: what SLURM's submit limits count."""
    return sum(len(units) for _, units in job_units(specs))


def task_of(unit: Sequence[JobSpec]):
    """What one array task runs: the point, or the points in turn (launcher/packed_job.py)."""
    return PointJob(unit[0]) if len(unit) == 1 and unit[0].shape.points_per_job == 1 else PackedJob(unit)


def submit_arrays(sweep_dir: Path, specs: Sequence[JobSpec], max_parallel: int, array_limit: int,
                  on_array: Callable[[List[Submitted]], None], max_requeues: int = MAX_REQUEUES_ON_TIMEOUT,
                  max_jobs: Optional[int] = None) -> List[int]:
    """Submits the points, one array at a time, at most `max_jobs` array tasks (None: all); on_array(its points)
    right after each sbatch, so what was queued is on record even when a later sbatch is refused (SbatchRefused).
    Nothing waits for the jobs. Returns the points held back by max_jobs, not submitted."""
    import submitit

    array_number, queued, room = 0, set(), max_jobs
    for shape, units in job_units(specs):
        for part in chunks(units, array_limit):
            part = part if room is None else part[:room]
            if not part:
                break
            executor = submitit.SlurmExecutor(folder=str(jobs_folder(sweep_dir)), python=python_shell(),
                                              max_num_timeout=max_requeues)
            executor.update_parameters(**executor_parameters(shape, max_parallel))
            try:  # submitit prints sbatch's stderr when sbatch fails; the error carries it, said once
                with outside_of_any_job(), contextlib.redirect_stderr(io.StringIO()):
                    with executor.batch():
                        jobs = [executor.submit(task_of(unit)) for unit in part]
            except (submitit.core.utils.FailedJobError, subprocess.SubprocessError, OSError) as error:
                raise SbatchRefused([s.point for s in specs if s.point not in queued],
                                    sbatch_reason(error)) from error
            on_array([Submitted(spec, job, array_number) for unit, job in zip(part, jobs) for spec in unit])
            queued.update(spec.point for unit in part for spec in unit)
            array_number += 1
            room = None if room is None else room - len(part)
    return [s.point for s in sorted(specs, key=lambda s: s.point) if s.point not in queued]


def keep_sbatch_scripts(submitted: Sequence[Submitted]) -> None:
    """Copies each array's exact sbatch script into its points' folders (provenance)."""
    for item in submitted:
        script = item.job.paths.submission_file
        if not script.exists():  # an array task's: submitit keeps the array's one script under the array's id
            array = item.job.job_id.split("_")[0]
            script = script.parent.parent / array / f"{array}_submission.sh"
        if script.exists():
            shutil.copyfile(script, Path(item.spec.point_dir) / "sbatch.sh")
