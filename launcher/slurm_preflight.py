"""Before anything is queued on SLURM: does each resource shape of the sweep fit the cluster?

The cluster's partitions and nodes come from `scontrol show partition|node -o`; the parsers here take that
text (and SLURM's GRES and time-limit formats) and return values, so they are tested on literal inputs
(tests/test_slurm_parsers.py); only the thin runners call scontrol.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Callable, Dict, List, Optional, Sequence

from launcher.jobspec import JobSpec, ResourceShape, group_by_shape

UNLIMITED_TIMES = ("UNLIMITED", "INFINITE", "NONE")


def parse_scontrol_records(text: str) -> List[Dict[str, str]]:
    """`scontrol show <kind> -o` text: one record per line of Key=Value pairs (a value ends at a space)."""
    return [dict(re.findall(r"(\w+)=(\S*)", line)) for line in text.splitlines() if line.strip()]


def scontrol_records(kind: str) -> List[Dict[str, str]]:
    text = subprocess.run(["scontrol", "show", kind, "-o"], check=True, capture_output=True, text=True).stdout
    return parse_scontrol_records(text)


def gres_gpus(gres: str) -> int:
    """GPUs in a node's Gres field, e.g. 'gpu:2', 'gpu:a100:4(S:0-1)', '(null)'."""
    total = 0
    for item in gres.split(","):
        match = re.match(r"gpu(?::[^:(]+)?:(\d+)", item)
        if match:
            total += int(match.group(1))
    return total


def time_limit_minutes(text: str) -> Optional[float]:
    """SLURM time ('UNLIMITED', 'MM', 'MM:SS', 'HH:MM:SS', 'D-HH', 'D-HH:MM', 'D-HH:MM:SS') in minutes;
    None for no limit."""
    if text in UNLIMITED_TIMES:
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
    """'n[1-2]' -> ['n1', 'n2'], as SLURM itself expands host lists."""
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
