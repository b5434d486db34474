"""Job states from SLURM: squeue for the jobs the controller holds, sacct for those that left the queue (where
accounting answers: it is often absent). Whether the process that runs a point is alive, where this host can
tell, is the launcher's (launcher/processes.py): every backend's points have one.

Both are asked once for the whole sweep (batched), never once per point or per array.
"""

from __future__ import annotations

import subprocess
from typing import Dict, Iterable, Optional, Sequence

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


def fill_from_array_records(jobs: Dict[str, Dict[str, str]], wanted: Iterable[str]) -> None:
    """Array tasks that were never split out of their array's own record take its state: once every pending task
    of array 12 is cancelled together, squeue (and sacct, until the array ends) list one job "12" CANCELLED and no
    "12_1" or "12_2"; without this those points were "lost" until sacct rewrote its record."""
    for job in wanted:
        base, _, task = job.partition("_")
        if task and job not in jobs and base in jobs:
            jobs[job] = jobs[base]


# squeue's answer when the only id it was given is one the controller has forgotten (MinJobAge after its end):
# an answer (that job is not in the queue), not a failure. Given several ids, it lists the known ones, rc 0.
SQUEUE_UNKNOWN_JOB = "Invalid job id specified"


def scheduler_text(command: list, unknown_is_empty: bool = False) -> Optional[str]:
    """A scheduler command's output; None where it could not run, failed or took over a minute. unknown_is_empty:
    squeue's "Invalid job id specified" (its only id forgotten) is an empty answer."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0 and unknown_is_empty and SQUEUE_UNKNOWN_JOB in done.stderr:
        return ""
    return done.stdout if done.returncode == 0 else None


def squeue_states(arrays: Sequence[str]) -> Optional[Dict[str, Dict[str, str]]]:
    """One squeue call for all these job (array) ids: the jobs the controller still holds, ended ones included
    (it keeps them MinJobAge seconds); None when squeue cannot be asked."""
    text = scheduler_text(["squeue", "-h", "-t", "all", "-o", "%i|%T|%N", "-j", ",".join(arrays)], unknown_is_empty=True)
    return None if text is None else parse_squeue(text)


def scheduler_states(job_ids: Iterable[str]) -> tuple[Dict[str, Dict[str, str]], str]:
    """States of the given jobs and where they came from ('squeue', 'sacct', 'squeue+sacct' or 'none').

    One squeue call for the whole sweep answers for every job the controller still holds (pending, running,
    and those that ended less than MinJobAge ago); one sacct call follows only for jobs squeue no longer lists
    (they left the queue). Never a call per point or per array: status polling is what loads a controller,
    and sacct is a database query besides (docs/decisions.md, issue 35)."""
    wanted = {j for j in job_ids if j}
    arrays = sorted({j.split("_")[0] for j in wanted})
    if not arrays:
        return {}, "none"
    jobs: Dict[str, Dict[str, str]] = {}
    sources = []
    queued = squeue_states(arrays)
    if queued is not None:
        jobs.update(queued)
        sources.append("squeue")
    fill_from_array_records(jobs, wanted)
    # an array squeue lists in part (some tasks purged, others pending) is asked of sacct whole: one call anyway
    left = sorted({j.split("_")[0] for j in wanted if j not in jobs})
    if left:
        text = scheduler_text(["sacct", "-X", "--parsable2", "--noheader", "-o", "JobID,State,NodeList,ExitCode",
                     "-j", ",".join(left)])
        if text is not None:
            jobs.update({k: v for k, v in parse_sacct(text).items() if k not in jobs})
            fill_from_array_records(jobs, wanted)
            sources.append("sacct")
    return jobs, "+".join(sources) or "none"
