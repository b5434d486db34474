"""Schema-v1 result documents with chosen times, for tests and examples (no training, no torch).

    doc = fake_result(point=0, workers_per_node=2, epoch_times=[5, 2.5, 1.5], step_times=[[1], [0.5], [0.5]])
    write_fake_result(sweep_dir, doc)   # -> sweep_dir/points/0/result.json

Every field a real train result has is present (docs/result-schema.md), so analysis.schema.validate_result
accepts it; only the times, the resource shape and the batch are chosen by the caller.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence


def fake_result(*, point: int, epoch_times: Sequence[float], step_times: Sequence[Sequence[float]],
                sweep: str = "study", repeat: int = 0, nodes: int = 1, workers_per_node: int = 1,
                scaling: str = "weak", batch_size: int = 32, model: str = "resnet18",
                status: str = "ok", reason: Optional[str] = None) -> Dict[str, Any]:
    """A result of the train workload; batch_size means what it means in the config (per worker for weak
    scaling, global for strong)."""
    world_size = nodes * workers_per_node
    per_worker = batch_size if scaling == "weak" else batch_size // world_size
    steps_per_epoch = len(step_times[0]) if step_times else 0
    per_rank: List[List[float]] = [[t] * world_size for t in epoch_times]  # every rank as slow as the slowest
    return {
        "schema_version": 1,
        "identity": {"sweep": sweep, "point": point, "repeat": repeat, "seed": repeat, "workload": "train"},
        "status": status,
        "reason": reason,
        "config": {
            "sweep": {"name": sweep, "root": "sweeps", "dir": f"sweeps/{sweep}", "wait": True,
                      "repeat": repeat, "seed": repeat},
            "resources": {"nodes": nodes, "workers_per_node": workers_per_node, "gpus_per_node": 0,
                          "cpus_per_worker": 1, "mem_gb": 0, "time_min": 30},
            "cluster": {"kind": "local", "max_parallel": 1, "poll_s": 1.0},
            "workload": {"name": "train", "model": model, "batch_size": batch_size, "scaling": scaling,
                         "epochs": len(epoch_times), "lr": 0.1},
        },
        "environment": {"world_size": world_size, "hosts": [f"node{i}" for i in range(nodes)], "ranks": [],
                        "backend": "gloo", "device": "cpu", "gpus": [], "env": {}},
        "timing": {"epoch": "fake: chosen by the test", "step": "fake: chosen by the test"},
        "measurements": {
            "epoch_time_s": list(epoch_times),
            "epoch_time_s_per_rank": per_rank,
            "step_time_s": [list(epoch) for epoch in step_times],
            "train_loss": [1.0] * len(epoch_times),
            "train_accuracy": [0.5] * len(epoch_times),
            "steps_per_epoch": steps_per_epoch,
            "per_worker_batch": per_worker,
            "global_batch": per_worker * world_size,
            "samples_per_epoch": steps_per_epoch * per_worker * world_size,
        } if status == "ok" else {},
        "derived": {},  # deliberately empty: the analysis must not read it
        "started_at": "2026-01-01T00:00:00+00:00",
        "finished_at": "2026-01-01T00:01:00+00:00",
    }


def write_fake_result(sweep_dir: Path, doc: Dict[str, Any]) -> Path:
    """Writes doc as sweep_dir/points/<identity.point>/result.json."""
    path = Path(sweep_dir) / "points" / str(doc["identity"]["point"]) / "result.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1))
    return path


def write_fake_manifest(sweep_dir: Path, points: Sequence[int], sweep: str = "study") -> Path:
    """A sweep manifest listing `points` (only the keys the analysis reads, plus overrides)."""
    path = Path(sweep_dir) / "manifest.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = [{"point": p, "overrides": [f"resources.workers_per_node={p + 1}"], "workload": "train"}
               for p in points]
    path.write_text(json.dumps({"manifest_version": 1, "sweep": sweep, "points": entries}, indent=1))
    return path
