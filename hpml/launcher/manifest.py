"""A sweep's manifest.json: every point's overrides, resources, job array and job id (layout: contract.sweep_layout).

`hpml launch` builds it from the plan and writes it before anything is submitted; submissions fill in the job
ids; `hpml status` and `hpml resume` read it back, and refuse one of the wrong shape in one line (ManifestError)
before they use any of it: a damaged manifest must not crash them, nor make resume rerun the wrong points.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Optional, Sequence

from hpml.contract.jsonio import MANIFEST_LIMIT, DamagedFile, load_json, type_name, write_json_atomic
from hpml.contract.sweep_layout import MANIFEST_FILE, MANIFEST_VERSION
from hpml.launcher.errors import LaunchError
from hpml.launcher.jobspec import group_by_shape

if TYPE_CHECKING:  # an annotation only: the planner asks the backends, which write manifests
    from hpml.launcher.planner import Plan


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


class ManifestError(LaunchError):
    """manifest.json exists but cannot be used; one line naming the file and the broken key."""


def read_manifest(sweep_dir: Path) -> Dict[str, Any]:
    path = Path(sweep_dir) / MANIFEST_FILE
    try:
        manifest = load_json(path, MANIFEST_LIMIT)
    except FileNotFoundError:
        raise FileNotFoundError(f"{sweep_dir} is not an hpml sweep directory (no readable {MANIFEST_FILE})") \
            from None
    except DamagedFile as error:
        raise ManifestError(f"{path}: {error}; restore it, or launch the sweep again") from None
    problem = manifest_problem(manifest)
    if problem:
        raise ManifestError(f"{path}: damaged manifest: {problem}; restore it, or launch the sweep again")
    return manifest


def _wrong(key: str, value: Any, expected: str) -> str:
    return f"{key} is {type_name(value)}, expected {expected}"


def manifest_problem(manifest: Any) -> Optional[str]:
    """The first way `manifest` differs from the shape status and resume rely on, or None. Point numbers must
    be the list's positions: resume finds a point's entry as manifest["points"][n]."""
    if not isinstance(manifest, dict):
        return _wrong("the document", manifest, "an object")
    if not isinstance(manifest.get("sweep"), str):
        return "sweep is missing" if "sweep" not in manifest else _wrong("sweep", manifest["sweep"], "a string")
    if "cluster" in manifest and not isinstance(manifest["cluster"], str):
        return _wrong("cluster", manifest["cluster"], "a string")
    points = manifest.get("points")
    if not isinstance(points, list):
        return "no list of points" if points is None else _wrong("points", points, "a list")
    for index, entry in enumerate(points):
        key = f"points[{index}]"
        if not isinstance(entry, dict):
            return _wrong(key, entry, "an object")
        if "point" not in entry:
            return f"{key}.point is missing"
        if type(entry["point"]) is not int or entry["point"] != index:
            return f"{key}.point is {entry['point']!r:.40}, expected {index} (its position in the list)"
        overrides = entry.get("overrides", [])
        if not isinstance(overrides, list) or not all(isinstance(o, str) for o in overrides):
            return _wrong(f"{key}.overrides", overrides, "a list of strings")
        if entry.get("job_id") is not None and not isinstance(entry["job_id"], str):
            return _wrong(f"{key}.job_id", entry["job_id"], "a string or null")
    launcher = manifest.get("launcher")
    if launcher is not None and not (isinstance(launcher, dict) and isinstance(launcher.get("host"), str)
                                     and type(launcher.get("pid")) is int):
        return "launcher is not an object with a host (a string) and a pid (a number)"
    return None


def write_manifest(sweep_dir: Path, manifest: Dict[str, Any]) -> None:
    write_json_atomic(Path(sweep_dir) / MANIFEST_FILE, manifest)
