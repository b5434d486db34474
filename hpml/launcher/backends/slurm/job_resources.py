"""For `hpml resume --grow` on SLURM: the memory each point's last job had and the nodes it ran on (one sacct call
for the sweep), the most its partition gives (MaxMemPerNode, else its largest node's RealMemory; MaxTime) and those
nodes' features (for cluster.gpu_ladder), from scontrol."""

from __future__ import annotations

import re
import subprocess
from typing import Dict, List, Optional, Sequence, Tuple

from hpml.launcher.backends.slurm.preflight import expand_nodelist, scontrol_records, time_limit_minutes
from hpml.launcher.backends.slurm.requests import NULL_VALUES, memory_limit_mb, node_features, real_memory_mb
from hpml.launcher.grow import JobResources
from hpml.launcher.jobspec import JobSpec

MB_PER_UNIT = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


def parse_req_mem(text: str) -> Optional[int]:
    """sacct's ReqMem ('4000M', '1G', older '1000Mn' per node / '500Mc' per CPU) -> MB per node (per CPU read as
    is: a 1-task job of one CPU per worker is close enough for doubling); None for '0' or unreadable."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]?)[nc]?", text.strip())
    if not match or float(match.group(1)) == 0:
        return None
    return int(float(match.group(1)) * MB_PER_UNIT[match.group(2) or "M"])


def parse_sacct_jobs(text: str) -> Dict[str, Tuple[Optional[int], str]]:
    """`sacct -X -nP -o JobID,ReqMem,NodeList` -> {job id: (MB, node list)}."""
    rows = [line.split("|") for line in text.splitlines() if line.count("|") >= 2]
    return {row[0]: (parse_req_mem(row[1]), row[2]) for row in rows}


def features_of(node_list: str, nodes: List[Dict[str, str]], expand) -> Tuple[str, ...]:
    """The features of the nodes in a node list ('n[1-2]'), each once, in order; () for none or unknown."""
    names = set(expand(node_list)) if node_list and node_list not in NULL_VALUES else set()
    found = [f for n in nodes if n.get("NodeName") in names for f in node_features(n)]
    return tuple(dict.fromkeys(found))


def partition_limits(name: Optional[str], partitions: List[Dict[str, str]], nodes: List[Dict[str, str]],
                     members) -> tuple:
    """(max MB per node, max minutes) of the named partition (None: the default one)."""
    chosen = [p for p in partitions if (p.get("PartitionName") == name if name else p.get("Default") == "YES")]
    if not chosen:
        return None, None
    partition = chosen[0]
    names = set(members(partition.get("Nodes", "")))
    largest = max((real_memory_mb(n) for n in nodes if n.get("NodeName") in names), default=0) or None
    limit = memory_limit_mb(partition)
    mem = min(x for x in (limit, largest) if x) if (limit or largest) else None
    return mem, time_limit_minutes(partition.get("MaxTime", "UNLIMITED"))


def job_resources(job_ids: Dict[int, str], specs: Sequence[JobSpec]) -> Dict[int, JobResources]:
    """{point: JobResources} for the points of `specs`, whose last jobs are job_ids[point]."""
    ids = sorted({j.split("_")[0] for j in job_ids.values() if j})
    jobs: Dict[str, Tuple[Optional[int], str]] = {}
    if ids:
        done = subprocess.run(["sacct", "-X", "-nP", "-o", "JobID,ReqMem,NodeList", "-j", ",".join(ids)],
                              capture_output=True, text=True, timeout=60)
        jobs = parse_sacct_jobs(done.stdout) if done.returncode == 0 else {}
    partitions, nodes = scontrol_records("partition"), scontrol_records("node")
    found = {}
    for spec in specs:
        max_mem, max_time = partition_limits(spec.shape.partition, partitions, nodes, expand_nodelist)
        mem, node_list = jobs.get(job_ids.get(spec.point) or "", (None, ""))
        found[spec.point] = JobResources(mem_mb=mem, time_min=spec.shape.time_min, max_mem_mb=max_mem,
                                         max_time_min=max_time, node_features=features_of(node_list, nodes,
                                                                                          expand_nodelist))
    return found
