"""SLURM's own energy number for each point's job (issue 36): once a job has ended, one batched
`sacct -nP -j <ids> --format=JobID,ConsumedEnergyRaw` for every ended job of the sweep not asked yet, and one
points/<n>/slurm_energy.json per point (contract.sweep_layout.SLURM_ENERGY_FILE), so that the report, which reads
files only, can put it beside NVML's. `hpml launch` (when it waits) and `hpml status` call it through the backend
(Backend.record_accounting); nothing is asked where the scheduler answers nothing.

ConsumedEnergyRaw is in joules, non-zero only where an AcctGatherEnergyType plugin is configured; empty or 0 is
recorded as null, with the plugin's name, so the report can say in one line that this cluster records no energy.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Dict, Iterable, List, Optional

from hpml.contract.jsonio import write_json_atomic
from hpml.contract.sweep_layout import SLURM_ENERGY_FILE, point_dir

ENERGY_PLUGIN_KEY = "AcctGatherEnergyType"


def sacct_energy_command(job_ids: Iterable[str]) -> List[str]:
    return ["sacct", "-nP", "-j", ",".join(job_ids), "--format=JobID,ConsumedEnergyRaw"]


def parse_consumed_energy(text: str) -> Dict[str, Optional[float]]:
    """sacct's lines "JobID|ConsumedEnergyRaw" -> {job id: joules or None}, the jobs' own lines only (427_1, not its
    steps 427_1.batch, 427_1.0, 427_1.extern: the job's line is its whole allocation). Empty, 0 or not a number:
    None (no energy plugin records it)."""
    energy: Dict[str, Optional[float]] = {}
    for line in text.splitlines():
        job, sep, raw = line.strip().partition("|")
        if not sep or not job or "." in job:
            continue
        try:
            value = float(raw.split("|")[0])
        except ValueError:
            value = 0.0
        energy[job] = value if value > 0 else None
    return energy


def record(sweep_dir: Path, ended: Dict[int, str], plugin: Optional[str], sacct_text: Optional[str]) -> List[int]:
    """Writes slurm_energy.json for each ended point {point: job id} that sacct listed; returns those points. Pure
    but for the files: the caller asked sacct (sacct_text: its output, None when it could not be asked)."""
    if sacct_text is None:
        return []
    energy = parse_consumed_energy(sacct_text)
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    written = []
    for point, job_id in sorted(ended.items()):
        if job_id not in energy:
            continue  # sacct does not know it (yet): asked again next time
        write_json_atomic(point_dir(sweep_dir, point) / SLURM_ENERGY_FILE, {
            "job_id": job_id, "consumed_energy_j": energy[job_id], "acct_gather_energy_type": plugin,
            "command": " ".join(sacct_energy_command([job_id])), "queried_at": now})
        written.append(point)
    return written


def not_recorded(sweep_dir: Path, points: Dict[int, str]) -> Dict[int, str]:
    return {point: job for point, job in points.items() if not (point_dir(sweep_dir, point) / SLURM_ENERGY_FILE).exists()}
