"""Job states from SLURM: sacct when accounting answers, squeue otherwise (sacct is often absent).

Both are asked once for the whole sweep (batched), never once per point.
"""

from __future__ import annotations

import subprocess
from typing import Dict, Iterable, Optional

# SLURM's job states, mapped to the point states hpml shows.
SLURM_TO_POINT = {
    "PENDING": "pending", "CONFIGURING": "pending", "REQUEUED": "pending", "REQUEUE_HOLD": "pending",
    "REQUEUE_FED": "pending", "RESV_DEL_HOLD": "pending", "SUSPENDED": "pending", "PREEMPTED": "pending",
    "RUNNING": "running", "COMPLETING": "running", "STAGE_OUT": "running", "SIGNALING": "running",
    "RESIZING": "running",
    "COMPLETED": "completed", "FAILED": "failed", "BOOT_FAIL": "failed", "DEADLINE": "timeout",
    "TIMEOUT": "timeout", "OUT_OF_MEMORY": "out_of_memory", "CANCELLED": "cancelled",
    "REVOKED": "cancelled", "NODE_FAIL": "node_fail", "SPECIAL_EXIT": "failed",
}


def point_state_of(slurm_state: str) -> str:
    """'CANCELLED by 0' -> cancelled; unknown states are shown as they are, lower-cased."""
    word = slurm_state.split()[0].rstrip("+") if slurm_state.strip() else "UNKNOWN"
    return SLURM_TO_POINT.get(word, word.lower())


def parse_sacct(text: str) -> Dict[str, Dict[str, str]]:
    """`sacct -X --parsable2 --noheader -o JobID,State,NodeList,ExitCode` -> {job id: fields}.

    An array task appears as 123_4; a pending array as 123_[5-9] (expanded here)."""
    jobs: Dict[str, Dict[str, str]] = {}
    for line in text.splitlines():
        fields = line.split("|")
        if len(fields) < 4:
            continue
        job_id, state, nodelist, exit_code = fields[:4]
        record = {"state": point_state_of(state), "slurm_state": state, "nodelist": nodelist,
                  "exit_code": exit_code}
        for expanded in expand_array_id(job_id):
            jobs[expanded] = record
    return jobs


def parse_squeue(text: str) -> Dict[str, Dict[str, str]]:
    """`squeue -h -t all -o %i|%T|%N` -> {job id: fields} (no exit codes there)."""
    jobs: Dict[str, Dict[str, str]] = {}
    for line in text.splitlines():
        fields = line.strip().split("|")
        if len(fields) < 3:
            continue
        job_id, state, nodelist = fields[:3]
        record = {"state": point_state_of(state), "slurm_state": state, "nodelist": nodelist, "exit_code": ""}
        for expanded in expand_array_id(job_id):
            jobs[expanded] = record
    return jobs


def expand_array_id(job_id: str) -> list:
    """'12_[0-2,5%4]' -> ['12_0', '12_1', '12_2', '12_5']; other ids unchanged."""
    if "_[" not in job_id:
        return [job_id]
    base, _, spec = job_id.partition("_[")
    spec = spec.rstrip("]").split("%")[0]
    ids = []
    for part in spec.split(","):
        first, _, last = part.partition("-")
        ids += [f"{base}_{i}" for i in range(int(first), int(last or first) + 1)]
    return ids


def _run(command: list) -> Optional[str]:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def scheduler_states(job_ids: Iterable[str], use_sacct: bool = True) -> tuple[Dict[str, Dict[str, str]], str]:
    """States of the given jobs and where they came from ('sacct', 'squeue', 'sacct+squeue' or 'none').

    sacct learns of a job a moment after sbatch (the controller reports to slurmdbd asynchronously), so
    jobs that sacct does not list yet are looked up in squeue too."""
    wanted = {j for j in job_ids if j}
    arrays = sorted({j.split("_")[0] for j in wanted})
    if not arrays:
        return {}, "none"
    jobs: Dict[str, Dict[str, str]] = {}
    sources = []
    if use_sacct:
        text = _run(["sacct", "-X", "--parsable2", "--noheader", "-o", "JobID,State,NodeList,ExitCode",
                     "-j", ",".join(arrays)])
        if text is not None:
            jobs.update(parse_sacct(text))
            sources.append("sacct")
    unseen = sorted({j.split("_")[0] for j in wanted if j not in jobs})
    if unseen:
        text = _run(["squeue", "-h", "-t", "all", "-o", "%i|%T|%N", "-j", ",".join(unseen)])
        if text is not None:
            jobs.update({k: v for k, v in parse_squeue(text).items() if k not in jobs})
            sources.append("squeue")
    return jobs, "+".join(sources) or "none"
