"""The sidecar of one node: points/<n>/telemetry.node<k>.json.gz (contract/telemetry_format.py).

Written once, when the point ends, atomically (a temporary file in the same folder, fsync'ed, renamed), so a
reader finds a whole sidecar or none. Values are rounded to what the counters resolve (counters that NVML
gives as integers are written as integers; seconds to 0.1 ms; watts to mW; GPM percentages to 0.001), which
keeps the JSON narrow; gzip then takes it to under a quarter (a 259-sample ResNet-50 run: 17,451 bytes of
JSON, 3,930 gzip'd, 0.47 MB per GPU-hour at 100 ms).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

from hpml.contract.jsonio import write_bytes_atomic
from hpml.contract.telemetry_format import TELEMETRY_VERSION, sidecar_name

INTEGER_FIELDS = frozenset({"util_gpu", "util_mem", "mem_used_bytes", "sm_clock_mhz", "mem_clock_mhz", "temp_c",
                            "throttle_reasons"})
DECIMALS = {"t_s": 4, "power_w": 3, "sm_activity": 3, "sm_occupancy": 3}


def _compact(name: str, values: List[Optional[float]]) -> List[Any]:
    if name in INTEGER_FIELDS:
        return [None if v is None else int(v) for v in values]
    places = DECIMALS.get(name)
    return values if places is None else [None if v is None else round(v, places) for v in values]


def sidecar_document(*, host: str, node_rank: int, interval_ms: int, t0_unix: float, decimation: int,
                     gpus: List[Dict[str, Any]], samples: Mapping[str, Mapping[str, List[Optional[float]]]],
                     phases: List[Dict[str, Any]], sampler: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    rounded_phases = [{**phase, **{key: None if phase[key] is None else round(phase[key], DECIMALS["t_s"])
                                   for key in ("start_s", "end_s")}} for phase in phases]
    return {
        "telemetry_version": TELEMETRY_VERSION,
        "host": host,
        "node_rank": node_rank,
        "interval_ms": interval_ms,
        "t0_unix": t0_unix,
        "decimation": decimation,
        "gpus": gpus,
        "samples": {uuid: {name: _compact(name, column) for name, column in columns.items()}
                    for uuid, columns in samples.items()},
        "phases": rounded_phases,
        # not in the contract's list: how the sampler itself fared (tick read times, skipped ticks, errors)
        "sampler": sampler,
    }


def write_sidecar(point_dir: Path, document: Dict[str, Any]) -> Path:
    path = Path(point_dir) / sidecar_name(document["node_rank"])
    data = gzip.compress(json.dumps(document, separators=(",", ":")).encode(), compresslevel=6, mtime=0)
    return write_bytes_atomic(path, data)


def read_sidecar(path: Path) -> Dict[str, Any]:
    """The document of a sidecar hpml wrote (tests, tools; the report reads with bounds: analysis/telemetry)."""
    return json.loads(gzip.decompress(Path(path).read_bytes()))
