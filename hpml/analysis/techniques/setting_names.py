"""The names of a sweep's settings in the GPU-utilization table.

A preset that sweeps a config group (experiment=gpu_utilization sweeps `utilization=baseline,workers,...`) has
already named its settings: each point's manifest lists its overrides, `utilization=all_device` among them. The
table uses those names; configurations that share one (the same setting launched again with other epochs) add
what tells them apart in parentheses. Where a sweep's points carry no such choice (values swept directly,
`workload.batch_size=32,512`), each configuration is named by where it departs from the sweep's common values.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Set

from hpml.analysis.results import point_overrides
from hpml.analysis.stats import differing_labels, labels_against_the_common
from hpml.contract.sweep_layout import MANIFEST_FILE

# group=choice: a config group's name (no dot: workload.batch_size=... is a value) and one choice (no sweep list)
GROUP_CHOICE = re.compile(r"(?P<group>[A-Za-z_][A-Za-z0-9_]*)=(?P<choice>[^,\s]+)")
NOT_A_SETTING = {"experiment"}  # the preset itself, shared by every point


def group_choices(result_path: Optional[str], manifests: Dict[Path, Optional[Dict[int, List[str]]]]) -> str:
    """The config-group choices of the point whose result.json is at result_path (points/<n>/result.json), as
    "choice" or "group=choice ..." when several groups were chosen; "" when its manifest names none."""
    if not result_path:
        return ""
    point_folder = Path(result_path).parent
    manifest = point_folder.parent.parent / MANIFEST_FILE
    if manifest not in manifests:
        manifests[manifest] = point_overrides(manifest)
    listed = manifests[manifest] or {}
    try:
        overrides = listed.get(int(point_folder.name), [])
    except ValueError:  # not a points/<n>/ folder: a result.json kept elsewhere
        return ""
    chosen = [m for m in map(GROUP_CHOICE.fullmatch, overrides) if m and m["group"] not in NOT_A_SETTING]
    if len(chosen) == 1:
        return chosen[0]["choice"]
    return " ".join(f"{m['group']}={m['choice']}" for m in chosen)


def setting_names(runs: List[Mapping[str, Any]]) -> Dict[str, str]:
    """config_key -> the setting's name (see the module's docstring)."""
    configurations = {r["config_key"]: r["config_items"] for r in runs}
    manifests: Dict[Path, Optional[Dict[int, List[str]]]] = {}
    chosen: Dict[str, Set[str]] = {}
    for run in runs:
        chosen.setdefault(run["config_key"], set()).add(group_choices(run.get("path"), manifests))
    if any(len(names) != 1 or "" in names for names in chosen.values()):
        return labels_against_the_common(configurations)  # some configuration has no single, named choice
    by_name: Dict[str, List[str]] = {}
    for key, (name,) in chosen.items():
        by_name.setdefault(name, []).append(key)
    labels = {}
    for name, keys in by_name.items():
        apart = differing_labels({key: configurations[key] for key in keys})
        for key in keys:
            labels[key] = f"{name} ({apart[key]})" if apart[key] else name
    return labels


__all__ = ["group_choices", "setting_names"]
