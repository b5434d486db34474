"""SLURM submission: one submitit job array per resource shape, split to the cluster's MaxArraySize.

Each array task is one sweep point: `nodes` tasks (one per node) each running torchrun. The point numbers
of the sweep are kept whatever the split: the manifest maps each point to its array job id and index.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Sequence

import submitit

from launcher.jobspec import JobSpec, ResourceShape, group_by_shape
from launcher.point_job import PointJob

# SIGUSR2 this long before the time limit: PointJob.checkpoint() then requeues the point, which resumes
# from its last epoch checkpoint.
SIGNAL_DELAY_S = 30
MAX_REQUEUES_ON_TIMEOUT = 3


def scontrol_config() -> Dict[str, str]:
    text = subprocess.run(["scontrol", "show", "config"], check=True, capture_output=True, text=True).stdout
    config = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            config[key.strip()] = value.strip()
    return config


def max_array_size(config: Dict[str, str]) -> int:
    """MaxArraySize: the largest index is MaxArraySize - 1, so an array holds at most this many tasks."""
    return int(config.get("MaxArraySize", "1001"))


def slurm_version() -> str:
    return subprocess.run(["sinfo", "--version"], check=True, capture_output=True, text=True).stdout.strip()


def chunks(specs: Sequence[JobSpec], size: int) -> List[List[JobSpec]]:
    return [list(specs[i:i + size]) for i in range(0, len(specs), size)]


def executor_parameters(shape: ResourceShape, max_parallel: int) -> Dict:
    """submitit SlurmExecutor parameters for a shape (values were checked by the schema: no shell)."""
    params: Dict = dict(
        nodes=shape.nodes,
        ntasks_per_node=1,  # one task per node runs torchrun, which starts the workers
        cpus_per_task=shape.cpus_per_task,
        time=shape.time_min,
        signal_delay_s=SIGNAL_DELAY_S,
        setup=list(shape.setup),
        srun_args=list(shape.srun_args),
        job_name="hpml",
    )
    if shape.gpus_per_node:
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


def submit_arrays(sweep_dir: Path, specs: Sequence[JobSpec], max_parallel: int,
                  array_limit: int) -> List[Submitted]:
    """Submits every point; returns right after sbatch (nothing waits for the jobs)."""
    submitted: List[Submitted] = []
    array_number = 0
    for shape, group in group_by_shape(specs):
        for part in chunks(group, array_limit):
            executor = submitit.SlurmExecutor(folder=str(sweep_dir / "jobs" / "%j"),
                                              max_num_timeout=MAX_REQUEUES_ON_TIMEOUT)
            executor.update_parameters(**executor_parameters(shape, max_parallel))
            with outside_of_any_job():
                with executor.batch():
                    jobs = [executor.submit(PointJob(spec)) for spec in part]
            submitted += [Submitted(spec, job, array_number) for spec, job in zip(part, jobs)]
            array_number += 1
    return submitted


def keep_sbatch_scripts(submitted: Sequence[Submitted]) -> None:
    """Copies each array's exact sbatch script into its points' folders (provenance)."""
    for item in submitted:
        script = item.job.paths.submission_file
        if script.exists():
            shutil.copyfile(script, Path(item.spec.point_dir) / "sbatch.sh")


# --- reading the cluster's partitions and nodes for preflight -------------------------------------------

def scontrol_records(kind: str) -> List[Dict[str, str]]:
    """`scontrol show <kind> -o`: one record per line of Key=Value pairs."""
    text = subprocess.run(["scontrol", "show", kind, "-o"], check=True, capture_output=True, text=True).stdout
    return [dict(re.findall(r"(\w+)=(\S*)", line)) for line in text.splitlines() if line.strip()]


def gres_gpus(gres: str) -> int:
    """GPUs in a node's Gres field, e.g. 'gpu:2', 'gpu:a100:4(S:0-1)', '(null)'."""
    total = 0
    for item in gres.split(","):
        match = re.match(r"gpu(?::[^:(]+)?:(\d+)", item)
        if match:
            total += int(match.group(1))
    return total


def time_limit_minutes(text: str) -> float | None:
    """SLURM time ('UNLIMITED', 'MM', 'MM:SS', 'HH:MM:SS', 'D-HH', 'D-HH:MM:SS') in minutes."""
    if text in ("UNLIMITED", "INFINITE", "NONE"):
        return None
    days, _, rest = text.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    if days:
        hours, minutes, seconds = (parts + [0, 0])[:3]
    elif len(parts) == 3:
        hours, minutes, seconds = parts
    elif len(parts) == 2:
        hours, minutes, seconds = 0, parts[0], parts[1]
    else:
        hours, minutes, seconds = 0, parts[0], 0
    return int(days or 0) * 1440 + hours * 60 + minutes + seconds / 60


def expand_nodelist(nodelist: str) -> List[str]:
    return subprocess.run(["scontrol", "show", "hostnames", nodelist], check=True, capture_output=True,
                          text=True).stdout.split()


def shape_problems(shape: ResourceShape, partitions: List[Dict[str, str]],
                   nodes: List[Dict[str, str]], expand: Callable[[str], List[str]] = expand_nodelist) -> List[str]:
    """Why a shape cannot run on this cluster, one line per problem (none: it fits)."""
    if shape.partition:
        chosen = [p for p in partitions if p.get("PartitionName") == shape.partition]
        if not chosen:
            names = ", ".join(p.get("PartitionName", "?") for p in partitions)
            return [f"cluster.partition={shape.partition}: no such partition (available: {names})"]
    else:
        chosen = [p for p in partitions if p.get("Default") == "YES"] or partitions[:1]
        if not chosen:
            return ["this cluster has no partition"]
    partition = chosen[0]
    name = partition.get("PartitionName")
    members = set(expand(partition.get("Nodes", "")))
    node_info = [n for n in nodes if n.get("NodeName") in members]
    problems = []
    if shape.nodes > len(node_info):
        problems.append(f"resources.nodes={shape.nodes}: partition {name} has {len(node_info)} node(s)")
    fitting = [n for n in node_info if gres_gpus(n.get("Gres", "")) >= shape.gpus_per_node
               and int(n.get("CPUTot", "0")) >= shape.cpus_per_task]
    if shape.gpus_per_node and not any(gres_gpus(n.get("Gres", "")) >= shape.gpus_per_node for n in node_info):
        most = max((gres_gpus(n.get("Gres", "")) for n in node_info), default=0)
        problems.append(f"resources.gpus_per_node={shape.gpus_per_node}: nodes of partition {name} have at "
                        f"most {most} GPU(s)")
    elif len(fitting) < shape.nodes and node_info:
        most = max(int(n.get("CPUTot", "0")) for n in node_info)
        if shape.cpus_per_task > most:
            problems.append(f"resources.workers_per_node x resources.cpus_per_worker = {shape.cpus_per_task} "
                            f"CPUs: nodes of partition {name} have at most {most}")
        elif shape.nodes <= len(node_info):
            problems.append(f"resources: only {len(fitting)} node(s) of partition {name} have "
                            f"{shape.gpus_per_node} GPU(s) and {shape.cpus_per_task} CPUs")
    max_time = time_limit_minutes(partition.get("MaxTime", "UNLIMITED"))
    if max_time is not None and shape.time_min > max_time:
        problems.append(f"resources.time_min={shape.time_min}: partition {name} allows at most "
                        f"{max_time:g} minutes (MaxTime)")
    return problems


def preflight(specs: Sequence[JobSpec]) -> List[str]:
    """Checks every resource shape of the sweep against the cluster before anything is queued."""
    if shutil.which("sbatch") is None:
        return ["cluster=slurm: sbatch is not on PATH (is this a SLURM login node?)"]
    try:
        partitions, nodes = scontrol_records("partition"), scontrol_records("node")
    except subprocess.CalledProcessError as error:
        return [f"cluster=slurm: scontrol failed: {(error.stderr or '').strip() or error}"]
    problems: List[str] = []
    for shape, _ in group_by_shape(specs):
        problems += shape_problems(shape, partitions, nodes)
    return list(dict.fromkeys(problems))
