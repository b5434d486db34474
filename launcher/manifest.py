"""A sweep's manifest.json: every point's overrides, resources, job array and job id (layout: contract.sweep_layout).

`hpml launch` builds it from the plan and writes it before anything is submitted; submissions fill in the job
ids; `hpml status` and `hpml resume` read it back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Sequence

from contract.jsonio import read_json, write_json_atomic
from contract.sweep_layout import MANIFEST_FILE, MANIFEST_VERSION
from launcher.jobspec import group_by_shape
from launcher.planner import Plan


def new_manifest(plan: Plan, argv: Sequence[str]) -> Dict[str, Any]:
    """The manifest of a planned launch: one array per resource shape, no job submitted yet."""
    specs = [p.spec for p in plan.points]
    first = plan.points[0]
    arrays = group_by_shape(specs)
    array_of = {spec.point: i for i, (_, group) in enumerate(arrays) for spec in group}
    return {
        "manifest_version": MANIFEST_VERSION,
        "sweep": first.config.sweep.name,
        "dir": str(first.sweep_dir),
        "argv": list(argv),
        "cluster": first.spec.shape.cluster.value,
        "arrays": [{"array": i, "shape": shape.describe(), "points": [s.point for s in group]}
                   for i, (shape, group) in enumerate(arrays)],
        "points": [{"point": s.point, "overrides": list(s.overrides), "workload": s.workload,
                    "world_size": s.shape.world_size, "resources": s.shape.describe(),
                    "array": array_of[s.point], "job_id": None} for s in sorted(specs, key=lambda s: s.point)],
    }


def read_manifest(sweep_dir: Path) -> Dict[str, Any]:
    manifest = read_json(Path(sweep_dir) / MANIFEST_FILE)
    if manifest is None:
        raise FileNotFoundError(f"{sweep_dir} is not an hpml sweep directory (no readable {MANIFEST_FILE})")
    return manifest


def write_manifest(sweep_dir: Path, manifest: Dict[str, Any]) -> None:
    write_json_atomic(Path(sweep_dir) / MANIFEST_FILE, manifest)
