"""GPU telemetry as the report reads it (analysis/telemetry/): sidecars in the format of
contract/telemetry_format.py (gzip'd JSON) with series written by hand, results whose telemetry block names them,
and `render`, the telemetry sections the report would write for them (tests/test_telemetry_report.py,
tests/test_telemetry_sidecars.py, tests/test_batch_augmentation_report.py)."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path
from typing import Any, Dict, List, Optional

from hpml.analysis import telemetry
from hpml.contract.sweep_layout import RESULT_FILE, point_dir
from hpml.contract.telemetry_format import SAMPLE_FIELDS, TELEMETRY_VERSION, sidecar_name
from hpml.report_kit.sections import write_sections
from tests.factories import envelope, write_result

GiB = 1024 ** 3
UUID_A, UUID_B = "aaaa-0000", "bbbb-1111"

# The hand-made series of GPU A, one sample a second (t = 0, 1, 2, 3). The warm-up phase [0, 0.5] is not timed;
# epochs 2 and 3 ([1, 2] and [2, 3]) are: the timed window holds the samples at t = 1, 2, 3.
SERIES_A = {
    "util_gpu": [0, 50, 100, 100],
    "util_mem": [90, 20, 30, None],  # a null inside the window: left out, never read as 0
    "mem_used_bytes": [10 * GiB, 5 * GiB, 3 * GiB, 2 * GiB],  # the 10 GiB peak is in warm-up: not the peak
    "power_w": [400, 100, 200, 300],
    "sm_activity": [None] * 4,  # GPM unavailable (not Hopper): n/a
}
PHASES = [  # energies per GPU; samples are every rank's
    {"name": "warmup", "index": 0, "timed": False, "start_s": 0.0, "end_s": 0.5, "samples": 1000,
     "energy_j": {UUID_A: 100.0, UUID_B: 90.0}},
    {"name": "epoch", "index": 1, "timed": True, "start_s": 1.0, "end_s": 2.0, "samples": 1000,
     "energy_j": {UUID_A: 200.0, UUID_B: 180.0}},
    {"name": "epoch", "index": 2, "timed": True, "start_s": 2.0, "end_s": 3.0, "samples": 1000,
     "energy_j": {UUID_A: 220.0, UUID_B: 200.0}},
]


def columns(n: int, **given: List[Optional[float]]) -> Dict[str, List[Optional[float]]]:
    """Every SAMPLE_FIELD for n samples one second apart; the ones not given are null (unavailable)."""
    return {name: given.get(name, list(range(n)) if name == "t_s" else [None] * n) for name in SAMPLE_FIELDS}


def sidecar_doc(series: Dict[str, Dict[str, List]], phases=PHASES, *, node_rank: int = 0, t0: float = 1000.0,
                host: str = "node0", unavailable: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """series: uuid -> its columns (as `columns` makes them). GPU i of the dict is CUDA index i."""
    gpus = [{"cuda_index": i, "nvml_index": i + 2, "uuid": uuid, "name": "NVIDIA H200", "mig": False,
             "unavailable": unavailable or {}} for i, uuid in enumerate(series)]
    return {"telemetry_version": TELEMETRY_VERSION, "host": host, "node_rank": node_rank, "interval_ms": 1000,
            "t0_unix": t0, "decimation": 1, "gpus": gpus, "samples": series, "phases": phases}


def write_sidecar(folder: Path, doc: Any, node_rank: int = 0) -> Path:
    path = folder / sidecar_name(node_rank)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return path


def result_with(root: Path, point: int, block: Optional[Dict[str, Any]], *, sweep: str = "study",
                status: str = "ok", repeat: int = 0) -> Dict[str, Any]:
    """A result of a workload with no report of its own (telemetry covers every workload), written to disk."""
    doc = envelope({"name": "vecadd"}, point=point, sweep=sweep, status=status, repeat=repeat,
                   reason=None if status == "ok" else "out of memory")
    if block is not None:
        doc["telemetry"] = block
    path = write_result(root / sweep, doc) if repeat == 0 else _write_repeat(root / sweep, doc, repeat)
    return {**doc, "path": str(path)}


def _write_repeat(root: Path, doc, repeat: int) -> Path:
    path = point_dir(root, doc["identity"]["point"]) / f"repeat{repeat}" / RESULT_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def ok_block(nodes: int = 1) -> Dict[str, Any]:
    return {"status": "ok", "reason": None, "interval_ms": 1000, "sidecars": [sidecar_name(k) for k in range(nodes)]}


def one_point(tmp_path: Path, series=None, phases=PHASES, status: str = "ok", **sidecar) -> Dict[str, Any]:
    row = result_with(tmp_path, 0, ok_block(), status=status)
    series = series or {UUID_A: columns(4, **SERIES_A)}
    write_sidecar(Path(row["path"]).parent, sidecar_doc(series, phases, **sidecar))
    return row


def read_csv(path: Path) -> List[Dict[str, str]]:
    with open(path) as f:
        return list(csv.DictReader(f))


def render(rows, out: Path):
    """(report markdown of the telemetry sections, files written)."""
    from hpml.report_kit.sections import report_markdown
    sections = telemetry.sections(rows)
    return report_markdown("t", sections), write_sections(sections, out)
