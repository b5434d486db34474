"""Each point's state: the sweep's own files first (result.json, state.json), then the scheduler's view.

A point whose result is ok is completed, whatever the scheduler says. Otherwise a finished state from
the scheduler (failed, timeout, cancelled, out of memory, node fail) or from the job's own state.json
wins; a job the scheduler no longer knows and that left no file is "lost" (resume reruns it).

`hpml status DIR` prints them (status_command); launch, resume and the progress line share current_states.
"""

from __future__ import annotations

import os
import socket
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

from conf.schema import ClusterKind
from contract.jsonio import read_json
from contract.sweep_layout import JOBS_DIR, RESULT_FILE, STATE_FILE, point_dir
from launcher.manifest import read_manifest
from launcher.scheduler_state import scheduler_states

# A point is finished when its state is one of these; resume reruns the ones not "completed".
FINISHED = ("completed", "failed", "oom", "timeout", "cancelled", "out_of_memory", "node_fail", "lost")


@dataclass
class PointState:
    point: int
    state: str  # not_submitted | pending | running | completed | failed | oom | timeout | ...
    reason: Optional[str]
    job_id: Optional[str]
    overrides: List[str]


def state_from_files(folder: Path) -> tuple[str, Optional[str]] | None:
    """The state the point's own files prove, or None if they prove nothing yet.

    The job's state.json has the last word: a result is written before the job ends, so a point is only
    completed once its job says so (or when it left a result and no job record at all)."""
    state = read_json(folder / STATE_FILE)
    if state is not None and state.get("state") in FINISHED + ("running",):
        return state["state"], state.get("reason")
    result = read_json(folder / RESULT_FILE)
    if result is not None:
        return ("completed", None) if result.get("status") == "ok" else \
            (result.get("status", "failed"), result.get("reason"))
    return None


def job_log_tail(sweep_dir: Path, job_id: str, lines: int = 5) -> Optional[str]:
    """The end of submitit's stderr for a job that died before it could write its own state."""
    log = Path(sweep_dir) / JOBS_DIR / job_id / f"{job_id}_0_log.err"
    try:
        text = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return None
    return "\n".join(text[-lines:]) or None


def combine(files: Optional[tuple], scheduler: Optional[Dict[str, str]], has_job: bool,
            scheduler_answered: bool) -> tuple[str, Optional[str]]:
    """One point's state from what its files prove and what the scheduler reports (pure)."""
    if files is not None and files[0] == "completed":
        return files
    sched = scheduler["state"] if scheduler else None
    if sched in FINISHED and sched != "completed":
        return sched, files[1] if files else None
    if files is not None:
        return files
    if sched == "completed":  # SLURM says done, yet no result: the job cannot have run the workload
        return "failed", "the job ended without writing a result"
    if sched is not None:
        return sched, None
    if has_job:
        return ("lost", "the scheduler no longer knows this job and it left no result") \
            if scheduler_answered else ("pending", None)
    return "not_submitted", None


def point_states(sweep_dir: Path, scheduler: Optional[Dict[str, Dict[str, str]]] = None) -> List[PointState]:
    """scheduler: {job id: {"state": ...}} from scheduler_state, or None to judge by the files alone."""
    manifest = read_manifest(sweep_dir)
    states = []
    for entry in manifest["points"]:
        job_id = entry.get("job_id")
        record = (scheduler or {}).get(job_id) if job_id else None
        state, reason = combine(state_from_files(point_dir(sweep_dir, entry["point"])), record,
                                bool(job_id), scheduler is not None)
        if state in FINISHED and state != "completed" and not reason and job_id:
            reason = job_log_tail(sweep_dir, job_id)
        states.append(PointState(point=entry["point"], state=state, reason=reason, job_id=job_id,
                                 overrides=entry["overrides"]))
    return states


def current_states(sweep_dir: Path) -> List[PointState]:
    """Point states, asking the scheduler (once, batched) when the sweep ran on SLURM."""
    manifest = read_manifest(sweep_dir)
    if manifest.get("cluster") != ClusterKind.slurm.value:
        return point_states(sweep_dir, local_jobs(manifest))
    jobs, source = scheduler_states([p["job_id"] for p in manifest["points"] if p.get("job_id")])
    return point_states(sweep_dir, jobs if source != "none" else None)


def local_jobs(manifest: Dict) -> Optional[Dict[str, Dict[str, str]]]:
    """Local jobs live as long as the `hpml launch` that runs them: once it is gone, a point that never
    finished is lost (resume reruns it). None while the launch still runs (judge by the files)."""
    launcher = manifest.get("launcher") or {}
    if launcher.get("host") != socket.gethostname() or process_alive(launcher.get("pid")):
        return None
    return {}


def process_alive(pid: Optional[int]) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    return True


def summary_counts(states: List[PointState]) -> Dict[str, int]:
    counts = Counter(s.state for s in states)
    return {"done": counts["completed"], "running": counts["running"],
            "failed": sum(counts[k] for k in FINISHED if k != "completed"),
            "pending": counts["pending"] + counts["not_submitted"], "total": len(states)}


def progress_line(name: str, states: List[PointState]) -> str:
    c = summary_counts(states)
    return (f"[{name}] {c['done']}/{c['total']} done, {c['running']} running, {c['pending']} pending, "
            f"{c['failed']} failed")


def status_table(states: List[PointState]) -> str:
    lines = ["point  state          job id        overrides / reason"]
    for s in states:
        lines.append(f"{s.point:<6} {s.state:<14} {str(s.job_id or '-'):<13} {' '.join(s.overrides) or '(defaults)'}")
        if s.reason and s.state != "completed":
            last = s.reason.strip().splitlines()[-1] if s.reason.strip() else s.reason
            lines.append(f"{'':<6} reason: {last}")
    return "\n".join(lines)


def status_command(sweep_dir: Path) -> int:
    """`hpml status DIR`: the progress line, then one line per point (and its reason when it failed)."""
    manifest = read_manifest(sweep_dir)
    states = current_states(sweep_dir)
    print(progress_line(manifest["sweep"], states))
    print(status_table(states))
    return 0
