"""Schema-v1 result documents with chosen numbers, one factory per workload, for the analysis tests:

    tests.factories.train.train_result          tests.factories.synthetic.synthetic_result
    tests.factories.allreduce.allreduce_result  tests.factories.dataloader.dataloader_result
    tests.factories.quantize.quantize_result    write_result(root, doc), write_manifest(root, points)

and GPU telemetry sidecars beside them (tests.factories.telemetry: sidecar_doc, write_sidecar, result_with).

Every document carries the envelope every result shares (docs/result-schema.md), so
contract.result_schema.validate_result accepts it; only the measurements each test needs are chosen by it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

from hpml.contract.result_format import SCHEMA_VERSION
from hpml.contract.sweep_layout import MANIFEST_FILE, MANIFEST_VERSION, RESULT_FILE, point_dir


def envelope(workload: Dict[str, Any], *, point: int, sweep: str = "study", repeat: int = 0, nodes: int = 1,
             workers_per_node: int = 1, status: str = "ok", reason: Optional[str] = None,
             environment: Optional[Dict[str, Any]] = None, gpus_per_node: int = 0) -> Dict[str, Any]:
    """A result of `workload` (its config.workload, with "name") with empty measurements."""
    return {
        "schema_version": SCHEMA_VERSION,
        "identity": {"sweep": sweep, "point": point, "repeat": repeat, "seed": repeat, "workload": workload["name"]},
        "status": status,
        "reason": reason,
        "config": {
            "sweep": {"name": sweep, "root": "sweeps", "dir": f"sweeps/{sweep}", "wait": True, "repeat": repeat,
                      "seed": repeat},
            "resources": {"nodes": nodes, "workers_per_node": workers_per_node, "gpus_per_node": gpus_per_node,
                          "cpus_per_worker": 1, "mem_gb": 0, "time_min": 30},
            "cluster": {"kind": "local", "max_parallel": 1, "poll_s": 1.0},
            "workload": workload,
        },
        "environment": {"world_size": nodes * workers_per_node, "hosts": [f"node{i}" for i in range(nodes)],
                        "ranks": [], "backend": "gloo", "device": "cpu", "gpus": [], "env": {},
                        **(environment or {})},
        "timing": {"note": "chosen by the test"},
        "measurements": {},
        "derived": {},  # the analysis must not read it
        "started_at": "2026-01-01T00:00:00+00:00",
        "finished_at": "2026-01-01T00:01:00+00:00",
    }


def write_result(root: Path, doc: Dict[str, Any], launch: str = "") -> Path:
    """Writes doc as root/<launch>/points/<identity.point>/result.json."""
    path = point_dir(Path(root) / launch, doc["identity"]["point"]) / RESULT_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1))
    return path


def write_manifest(sweep_dir: Path, points: Sequence[int], sweep: str = "study") -> Path:
    """A sweep manifest listing `points` (only the keys the analysis reads, plus overrides)."""
    path = Path(sweep_dir) / MANIFEST_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = [{"point": p, "overrides": [f"resources.workers_per_node={p + 1}"], "workload": "train"}
               for p in points]
    path.write_text(json.dumps({"manifest_version": MANIFEST_VERSION, "sweep": sweep, "points": entries}, indent=1))
    return path
