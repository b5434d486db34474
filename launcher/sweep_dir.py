"""The sweep directory: manifest.json for the sweep, and per point config.yaml, state.json, result.json, logs/.

    <sweep>/manifest.json          every point: overrides, resources, array, job id (written by the launcher)
    <sweep>/points/<n>/config.yaml the point's resolved config (read by the workers)
    <sweep>/points/<n>/state.json  the job's own account: running / completed / failed + reason
    <sweep>/points/<n>/result.json the workload's result (schema: docs/result-schema.md)
    <sweep>/points/<n>/logs/       torchrun's stdout and stderr
    <sweep>/jobs/                  submitit's pickles and logs
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Dict

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
STATE_FILE = "state.json"
RESULT_FILE = "result.json"


def write_json_atomic(path: Path, document: Any) -> None:
    """Write to a temporary file in the same folder, then rename: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(document, f, indent=1, default=str)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_json(path: Path) -> Dict[str, Any] | None:
    """None when the file is absent or unreadable (a job killed mid-write leaves no partial file)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def read_manifest(sweep_dir: Path) -> Dict[str, Any]:
    manifest = read_json(Path(sweep_dir) / MANIFEST)
    if manifest is None:
        raise FileNotFoundError(f"{sweep_dir} is not an hpml sweep directory (no readable {MANIFEST})")
    return manifest


def write_manifest(sweep_dir: Path, manifest: Dict[str, Any]) -> None:
    write_json_atomic(Path(sweep_dir) / MANIFEST, manifest)


def point_dir(sweep_dir: Path, point: int) -> Path:
    return Path(sweep_dir) / "points" / str(point)
