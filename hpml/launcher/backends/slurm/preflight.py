"""Before anything is queued on SLURM: does each resource shape of the sweep fit the cluster?

The cluster's partitions and nodes come from `scontrol show partition|node -o`; the parsers here take that
text (and SLURM's GRES and time-limit formats) and return values, so they are tested on literal inputs
(tests/test_slurm_parsers.py); only the thin runners call scontrol.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from hpml.launcher.backends.slurm.requests import (
    NULL_VALUES,
    gpu_request,
    memory_limit_mb,
    node_features,
    offers,
    parse_gres,
    real_memory_mb,
    satisfies_constraint,
)
from hpml.launcher.jobspec import JobSpec, ResourceShape, group_by_shape

UNLIMITED_TIMES = ("UNLIMITED", "INFINITE", "NONE")
# (the key and value a user set, does this node meet it, what it asks in words)
Requirement = Tuple[str, Callable[[Dict[str, str]], bool], str]


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


def request_problems(shape: ResourceShape) -> List[str]:
    """What is wrong with the shape itself, whatever the cluster: a GPU request in sbatch_extra must be one
    SLURM reads and must match resources.gpus_per_node, which decides how many GPUs the workers use."""
    try:
        request = gpu_request(shape)
        parse_gres(dict(shape.sbatch_extra).get("gres", ""))
    except ValueError as error:
        return [f"cluster.sbatch_extra: {error}"]
    if request and request[2].count != shape.gpus_per_node:
        option, value, gpus = request
        return [f"cluster.sbatch_extra.{option}={value} asks for {gpus.count} GPU(s) per node but "
                f"resources.gpus_per_node={shape.gpus_per_node}; set resources.gpus_per_node={gpus.count} (the "
                f"workers use that many)"]
    return []


def node_requirements(shape: ResourceShape, partition: Dict[str, str]) -> List[Requirement]:
    """Each thing the shape asks of a node: (the key and value, how to tell a node has it, what nodes lacking
    it have instead)."""
    requirements: List[Requirement] = []
    request = gpu_request(shape)
    if request:
        option, value, gpus = request
        requirements.append((f"cluster.sbatch_extra.{option}={value}", lambda n, g=gpus: offers(n, g),
                             "GRES " + ("gpu type " + gpus.type if gpus.type else f"{gpus.count} GPU(s)")))
    elif shape.gpus_per_node:
        requirements.append((f"resources.gpus_per_node={shape.gpus_per_node}",
                             lambda n: gres_gpus(n.get("Gres", "")) >= shape.gpus_per_node,
                             f"{shape.gpus_per_node} GPU(s)"))
    for other in [g for g in parse_gres(dict(shape.sbatch_extra).get("gres", "")) if g.name != "gpu"]:
        requirements.append((f"cluster.sbatch_extra.gres={dict(shape.sbatch_extra)['gres']}",
                             lambda n, g=other: offers(n, g), f"GRES {other.name}"))
    if shape.cpus_per_task > 1:
        requirements.append((f"resources.workers_per_node x resources.cpus_per_worker = {shape.cpus_per_task} CPUs",
                             lambda n: int(n.get("CPUTot", "0")) >= shape.cpus_per_task,
                             f"{shape.cpus_per_task} CPUs"))
    if shape.mem_gb:
        requirements.append((f"resources.mem_gb={shape.mem_gb}",
                             lambda n: real_memory_mb(n) >= shape.mem_gb * 1024, f"{shape.mem_gb} GB of memory"))
    for key, constraint in (("cluster.constraint", shape.constraint),
                            ("cluster.sbatch_extra.constraint", dict(shape.sbatch_extra).get("constraint"))):
        if constraint:
            requirements.append((f"{key}={constraint}", lambda n, c=constraint: satisfies_constraint(n, c),
                                 f"features {constraint}"))
    return requirements


def lacking(key: str, nodes: List[Dict[str, str]], partition: str) -> str:
    """Why no node of the partition meets one requirement, with what the nodes have."""
    if key.startswith("resources.gpus_per_node"):
        most = max((gres_gpus(n.get("Gres", "")) for n in nodes), default=0)
        return f"{key}: nodes of partition {partition} have at most {most} GPU(s)"
    if key.startswith("resources.workers_per_node"):
        most = max((int(n.get("CPUTot", "0")) for n in nodes), default=0)
        return f"{key}: nodes of partition {partition} have at most {most}"
    if key.startswith("resources.mem_gb"):
        most = max((real_memory_mb(n) for n in nodes), default=0)
        return (f"{key}: nodes of partition {partition} have at most {most / 1024:.1f} GB "
                f"(RealMemory {most} MB)")
    if "constraint" in key or "gpu_ladder" in key:
        features = sorted({f for n in nodes for f in node_features(n)})
        return f"{key}: no node of partition {partition} has it (features there: {', '.join(features) or 'none'})"
    gres = sorted({n.get("Gres", "") for n in nodes} - set(NULL_VALUES))
    return f"{key}: no node of partition {partition} has it (GRES there: {', '.join(gres) or 'none'})"


def shape_problems(shape: ResourceShape, partitions: List[Dict[str, str]],
                   nodes: List[Dict[str, str]], expand: Callable[[str], List[str]] = expand_nodelist) -> List[str]:
    """Why a shape cannot run on this cluster, one line per problem (none: it fits)."""
    problems = request_problems(shape)
    if problems:
        return problems
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
    name = partition.get("PartitionName", "?")
    members = set(expand(partition.get("Nodes", "")))
    node_info = [n for n in nodes if n.get("NodeName") in members]
    if shape.nodes > len(node_info):
        problems.append(f"resources.nodes={shape.nodes}: partition {name} has {len(node_info)} node(s)")
    requirements = node_requirements(shape, partition)
    unmet = [key for key, meets, _ in requirements if not any(meets(n) for n in node_info)]
    problems += [lacking(key, node_info, name) for key in unmet]
    # each rung of the ladder on some node (not all on one: a rung is where --grow sends a point, one at a time)
    problems += [lacking(f"cluster.gpu_ladder={','.join(shape.gpu_ladder)}: {rung}", node_info, name)
                 for rung in shape.gpu_ladder if not any(satisfies_constraint(n, rung) for n in node_info)]
    limit = memory_limit_mb(partition)
    if shape.mem_gb and limit is not None and shape.mem_gb * 1024 > limit:
        problems.append(f"resources.mem_gb={shape.mem_gb}: partition {name} allows at most {limit} MB per node "
                        "(MaxMemPerNode)")
    if not unmet and shape.nodes <= len(node_info):
        fitting = [n for n in node_info if all(meets(n) for _, meets, _ in requirements)]
        if len(fitting) < shape.nodes:
            wanted = " and ".join(what for _, _, what in requirements)
            problems.append(f"resources: only {len(fitting)} node(s) of partition {name} have {wanted}")
    max_time = time_limit_minutes(partition.get("MaxTime", "UNLIMITED"))
    if max_time is not None and shape.job_time_min > max_time:
        packed = f" x cluster.points_per_job={shape.points_per_job}" if shape.points_per_job > 1 else ""
        problems.append(f"resources.time_min={shape.time_min}{packed}: partition {name} allows at most "
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
