"""What a sweep point asks of one SLURM node, in SLURM's own formats, and whether a node offers it.

Pure: scontrol's node records (dicts of its Key=Value text) and the point's ResourceShape in, values out, so
each rule is tested on literal inputs (tests/test_slurm_parsers.py). The checks that use them, and the words
they print, are in launcher/backends/slurm/preflight.py.

GRES, as sbatch and `scontrol show node` write them:
    node      Gres=gpu:a100:4(S:0-1),gpu:v100:2      name:type:count, a socket list in parentheses
    request   --gres=gpu:a100:4 | gpu:4 | gpu:a100 | gpu   count 1 when left out
    request   --gpus-per-node=a100:4 | 4                     [type:]count, the name is gpu
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from hpml.conf.schema import FEATURE_NAME
from hpml.launcher.jobspec import ResourceShape

NULL_VALUES = ("", "(null)", "N/A", "NONE")
# sbatch_extra options that ask for GPUs per node (`gpus` is for the whole job; one task per node here, so
# `gpus-per-task` is per node too). One of them replaces hpml's own --gpus-per-node.
GPU_OPTIONS = ("gres", "gpus-per-node", "gpus", "gpus-per-task")


@dataclass(frozen=True)
class Gres:
    name: str  # gpu, shard, mps, ...
    type: Optional[str]  # a100, h100, ... (None: any)
    count: int


def parse_gres(text: str, count_required: bool = False) -> List[Gres]:
    """'gpu:a100:4(S:0-1),gpu:2' -> [Gres('gpu', 'a100', 4), Gres('gpu', None, 2)]; '(null)' -> [].
    Raises ValueError on an item SLURM would not read (an empty name, a count of 0, 'gpu:a:b:c')."""
    if text.strip() in NULL_VALUES:
        return []
    items = []
    for raw in text.split(","):
        item = re.sub(r"\(.*?\)", "", raw).strip()  # the socket binding, '(S:0-1)'
        parts = item.split(":")
        if not item or not parts[0] or len(parts) > 3:
            raise ValueError(f"{raw!r} is not name[:type][:count]")
        count: Optional[int] = None
        if len(parts) > 1 and parts[-1].isdigit():
            count = int(parts.pop())
        if len(parts) > 2 or (count is not None and count < 1) or (count is None and count_required):
            raise ValueError(f"{raw!r} is not name[:type][:count]")
        items.append(Gres(parts[0], parts[1] if len(parts) == 2 and parts[1] else None,
                          1 if count is None else count))
    return items


def gpu_request(shape: ResourceShape) -> Optional[Tuple[str, str, Gres]]:
    """(option, value, GPUs per node asked) of the sbatch_extra option that asks for GPUs, or None.
    Raises ValueError on a value that is not a GRES or GPU count."""
    extra = dict(shape.sbatch_extra)
    for option in GPU_OPTIONS:
        value = extra.get(option)
        if value is None:
            continue
        if option == "gres":
            gpus = [g for g in parse_gres(value) if g.name == "gpu"]
            if gpus:
                return option, value, Gres("gpu", gpus[0].type, sum(g.count for g in gpus))
            continue
        kind, _, count = value.rpartition(":")
        if not count.isdigit() or int(count) < 1:
            raise ValueError(f"{value!r} is not [type:]count")
        per_node = math.ceil(int(count) / shape.nodes) if option == "gpus" else int(count)
        return option, value, Gres("gpu", kind or None, per_node)
    return None


def node_gres(node: Dict[str, str]) -> List[Gres]:
    """A node's GRES; a record SLURM wrote but this parser cannot read counts as none."""
    try:
        return parse_gres(node.get("Gres", ""), count_required=True)
    except ValueError:
        return []


def offers(node: Dict[str, str], wanted: Gres) -> bool:
    """Has this node `wanted.count` of that GRES (of that type, when one is named)?"""
    have = sum(g.count for g in node_gres(node)
               if g.name == wanted.name and (wanted.type is None or g.type == wanted.type))
    return have >= wanted.count


def node_features(node: Dict[str, str]) -> List[str]:
    text = node.get("AvailableFeatures", "")
    return [] if text in NULL_VALUES else [f for f in text.split(",") if f]


def constraint_features(constraint: str) -> List[str]:
    """The feature names of a --constraint expression ('a100&ib', '[rack1|rack2]', 'fat*2')."""
    return FEATURE_NAME.findall(re.sub(r"\*\d+", "", constraint))


def satisfies_constraint(node: Dict[str, str], constraint: str) -> bool:
    """A node fits an AND-only expression when it has every feature; an expression with | or [ ] is read
    as 'some feature of it' (which nodes together satisfy it is SLURM's to decide)."""
    names, have = constraint_features(constraint), set(node_features(node))
    if re.search(r"[|\[\]]", constraint):
        return bool(have & set(names))
    return set(names) <= have


def real_memory_mb(node: Dict[str, str]) -> int:
    text = node.get("RealMemory", "0")
    return int(text) if text.isdigit() else 0


def memory_limit_mb(partition: Dict[str, str]) -> Optional[int]:
    """The partition's MaxMemPerNode in MB (None: no limit)."""
    text = partition.get("MaxMemPerNode", "UNLIMITED")
    return int(text) if text.isdigit() else None
