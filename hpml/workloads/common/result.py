"""Writing result.json (docs/result-schema.md); its version, statuses and file name are contract/'s.

One file per sweep point, written by rank 0, atomically. Keys:
  schema_version  1
  identity        sweep, point, repeat, seed, workload
  status          "ok" | "failed" | "oom" | "timeout";  reason: null or why not ok
  config          the point's resolved config (the whole tree)
  environment     hosts, ranks, world size, versions, GPUs, allow-listed environment variables
  timing          how each measurement was taken (words, so a reader knows what a number means)
  measurements    raw arrays (per step, per epoch, per rank)
  derived         numbers computed from the raw arrays by the workload (the analysis recomputes its own)
  telemetry       GPU telemetry: status ok/unavailable/disabled, reason, interval_ms, the sidecars' names
                  (contract/telemetry_format.py); absent in results written before it existed
  started_at, finished_at   ISO-8601 UTC
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Optional

from hpml.contract.jsonio import utc_now, write_json_atomic
from hpml.contract.result_format import SCHEMA_VERSION, STATUSES
from hpml.contract.sweep_layout import RESULT_FILE, point_number


def point_identity(config: Dict[str, Any], point_dir: Path) -> Dict[str, Any]:
    """The point number is the name of its directory (points/<n>/), which the launcher chose."""
    return {
        "sweep": config["sweep"]["name"],
        "point": point_number(point_dir),
        "repeat": config["sweep"]["repeat"],
        "seed": config["sweep"]["seed"],
        "workload": config["workload"]["name"],
    }


def build_result(*, config: Dict[str, Any], point_dir: Path, status: str, reason: Optional[str],
                 environment: Dict[str, Any], timing: Dict[str, str], measurements: Dict[str, Any],
                 derived: Dict[str, Any], started_at: str,
                 telemetry: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    if status not in STATUSES:
        raise ValueError(f"status {status!r} is not one of {STATUSES}")
    result = {
        "schema_version": SCHEMA_VERSION,
        "identity": point_identity(config, point_dir),
        "status": status,
        "reason": reason,
        "config": config,
        "environment": environment,
        "timing": timing,
        "measurements": measurements,
        "derived": derived,
        "started_at": started_at,
        "finished_at": utc_now(),
    }
    if telemetry is not None:
        result["telemetry"] = telemetry
    return result


def write_result(point_dir: Path, result: Dict[str, Any]) -> Path:
    path = Path(point_dir) / RESULT_FILE
    write_json_atomic(path, result)
    return path
