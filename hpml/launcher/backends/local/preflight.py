"""Checks of a local sweep against this machine, before anything is written: one line per problem, each
naming the key and the value that works here. (The SLURM counterpart, which asks the cluster, is
launcher/backends/slurm/preflight.py.)

The config alone cannot tell whether a point fits the machine: a GPU preset on a host without a GPU would
otherwise run on the CPU without a word, and a million workers would end in "Argument list too long".
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import List, Sequence

from hpml.conf.schema import HpmlConfig
from hpml.conf.validation import shown
from hpml.conf.workload_contract import Device

# Workers or threads beyond the cores only share them (gloo tests run 4 workers on 2 cores; a GPU preset
# asks 4 threads per worker), so a few per core are allowed; more is a typo, not a study.
PER_CORE = 4
NVIDIA_PROC_GPUS = Path("/proc/driver/nvidia/gpus")  # one entry per GPU the driver sees; no process started


def machine_cores() -> int:
    """The CPU cores this process may run on (a container or taskset may allow fewer than the host has)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def installed_gpus() -> int:
    if NVIDIA_PROC_GPUS.is_dir():
        return len(list(NVIDIA_PROC_GPUS.iterdir()))
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(line.startswith("GPU ") for line in listing.splitlines())


def visible_gpus() -> int:
    """GPUs a point started here can use: the installed ones, narrowed by CUDA_VISIBLE_DEVICES as CUDA
    narrows them (the list ends at its first invalid entry, e.g. -1)."""
    installed = installed_gpus()
    mask = os.environ.get("CUDA_VISIBLE_DEVICES")
    if mask is None:
        return installed
    count = 0
    for entry in mask.split(","):
        entry = entry.strip()
        if not entry or entry.startswith("-"):
            break
        count += 1
    return min(count, installed)


def point_problems(config: HpmlConfig, cores: int, gpus: int) -> List[str]:
    res, workload = config.resources, config.workload
    problems = []
    if res.nodes != 1:  # torchrun here starts one node's workers, never more
        problems.append(f"resources.nodes={res.nodes} is not allowed: 1 on cluster=local (this machine is one "
                        "node); use cluster=slurm for more nodes")
    if not config.sweep.wait:
        problems.append("sweep.wait=false is not allowed on cluster=local: the local runner runs the points "
                        "inside `hpml launch`, which waits for them; drop it, or use cluster=slurm to return "
                        "right after submitting")
    if res.gpus_per_node > gpus:
        fix = ("use resources.gpus_per_node=0 to run on the CPU" if gpus == 0
               else f"use resources.gpus_per_node={gpus} or fewer")
        fix += " (planning for another machine: --dry-run with cluster.assume_gpus=N)"
        mask = shown(os.environ.get("CUDA_VISIBLE_DEVICES"))
        problems.append(f"resources.gpus_per_node={res.gpus_per_node} is not allowed: this machine has "
                        f"{gpus} visible GPU(s) (CUDA_VISIBLE_DEVICES={mask}); {fix}")
    elif workload.device == Device.cuda and gpus == 0:
        problems.append("workload.device=cuda is not allowed: this machine has no visible GPU; use "
                        "workload.device=auto (or cpu) with resources.gpus_per_node=0")
    elif workload.device == Device.cuda and res.gpus_per_node == 0:
        # the local runner hides every GPU from a point that asks for none (CUDA_VISIBLE_DEVICES="")
        problems.append("workload.device=cuda is not allowed: resources.gpus_per_node=0 on cluster=local "
                        "gives the point no GPU; set resources.gpus_per_node=1 (or more), or workload.device=auto")
    for key in ("workers_per_node", "cpus_per_worker"):
        if getattr(res, key) > PER_CORE * cores:
            problems.append(f"resources.{key}={getattr(res, key)} is not allowed: at most {PER_CORE * cores} "
                            f"({PER_CORE} per CPU core of this machine's {cores}) on cluster=local")
    return problems


def local_problems(configs: Sequence[HpmlConfig]) -> List[str]:
    """Problems of the points against this machine, each reported once."""
    cores = machine_cores()
    counted = visible_gpus() if any(c.resources.gpus_per_node or c.workload.device == Device.cuda
                                    for c in configs) else 0
    problems: List[str] = []
    for config in configs:
        assumed = config.cluster.assume_gpus
        problems.extend(point_problems(config, cores, counted if assumed is None else assumed))
    return list(dict.fromkeys(problems))
