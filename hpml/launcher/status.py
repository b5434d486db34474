"""Each point's state: the sweep's own files first (result.json, state.json), then the scheduler's view.

A point is completed only when its result.json is a valid result (contract.result_schema's envelope) whose
status is ok: a missing, truncated or damaged result, or one of the wrong shape, never counts as done, so `hpml resume`
reruns the point. Otherwise a finished state from the scheduler (failed, timeout, cancelled, out of memory,
node fail) or from the job's own state.json wins; a job the scheduler no longer knows and that left no file
is "lost", and a point whose state.json says running while the process that runs it is gone is
"interrupted" (resume reruns both). A damaged state.json proves nothing; each damaged file is one line.

`hpml status DIR` prints them (status_command); launch, resume and the progress line share current_states.
"""

from __future__ import annotations

import os
import stat
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from hpml.contract.folders import folder_problem
from hpml.contract.jsonio import RESULT_LIMIT, STATE_LIMIT, DamagedFile, load_json, type_name
from hpml.contract.result_schema import validate_result
from hpml.contract.sweep_layout import RESULT_FILE, STATE_FILE, point_dir, point_number
from hpml.launcher.backends import backend_of_manifest
from hpml.launcher.failure_reason import job_log_reason, memory_limit_kill
from hpml.launcher.manifest import read_manifest
from hpml.launcher.processes import runner_alive

# Stops that come from outside the work (a signal, the scheduler's time limit): one that lands after the workload
# wrote its ok result (written whole: a rename) does not undo the finished work (an H100 launch stopped by its
# time limit between a point's result and its job's end left an ok result under an "interrupted" state). A
# job that failed on its own keeps its word over its result.
STOPPED_FROM_OUTSIDE = ("interrupted", "cancelled", "timeout")
# A point is finished when its state is one of these; resume reruns the ones not "completed".
FINISHED = ("completed", "failed", "oom", "timeout", "cancelled", "out_of_memory", "node_fail", "lost",
            "interrupted")
# Ends a point's own files name more exactly than the scheduler's FAILED of its job: `hpml resume --grow` grows
# the memory of a point whose worker ran out of it (a job that fails says only FAILED).
OWN_ENDS = ("oom", "timeout")
# What a state.json may say: a finished state, or one that proves nothing final yet.
KNOWN_STATES = FINISHED + ("running", "requeued", "pending")
# What the scheduler says of a job it still holds: queued (or requeued) or running (or ending: COMPLETING)
BUSY = ("pending", "running")

RUNNER_GONE = "its state.json says running, but the process that ran it is gone (interrupted or killed)"
SCHEDULER_FORGOT = "the scheduler no longer knows this job and it left no result"
ENDED_RUNNING = "the job ended, but its state.json still says running"


@dataclass
class PointState:
    point: int
    state: str  # not_submitted | pending | running | completed | failed | oom | timeout | ...
    reason: Optional[str]
    job_id: Optional[str]
    overrides: List[str]
    problems: List[str] = field(default_factory=list)  # damaged files of the point, one line each


@dataclass
class PointFiles:
    """What a point's own files prove. state/reason: None when they prove nothing yet. runner: the
    state.json's record of the process that runs the point, {"host", "pid", "started_at"}, when it says so."""

    state: Optional[str] = None
    reason: Optional[str] = None
    runner: Dict = field(default_factory=dict)
    problems: List[str] = field(default_factory=list)
    result_ok: bool = False  # a "running" point's result.json is already a valid ok result of its own

    @property
    def proven(self) -> Optional[Tuple[str, Optional[str]]]:
        return (self.state, self.reason) if self.state else None


def read_state(folder: Path, problems: List[str]) -> Dict:
    """state.json as an object whose "state" is a known word, or {} (absent or damaged: one line in problems)."""
    try:
        state = load_json(folder / STATE_FILE, STATE_LIMIT)
    except FileNotFoundError:
        return {}
    except DamagedFile as error:
        problems.append(f"{STATE_FILE}: {error}")
        return {}
    if not isinstance(state, dict):
        problems.append(f"{STATE_FILE}: the document is {type_name(state)}, expected an object")
        return {}
    if state.get("state") not in KNOWN_STATES:
        word = state.get("state")
        problems.append(f"{STATE_FILE}: state is {word!r:.40}, expected one of {', '.join(KNOWN_STATES)}"
                        if isinstance(word, str) else f"{STATE_FILE}: state is {type_name(word)}, expected a word")
        return {}
    if state.get("reason") is not None and not isinstance(state["reason"], str):
        problems.append(f"{STATE_FILE}: reason is {type_name(state['reason'])}, expected a string")
        state = {**state, "reason": None}
    return state


# What read_result found in each result.json, by (path, inode, size, mtime): the progress printer asks every
# few seconds for the whole sweep, and a result is read and checked once, not once per tick.
_RESULT_SEEN: Dict[tuple, Tuple[Optional[str], Optional[str], Optional[str]]] = {}


def read_result(folder: Path, sweep: Optional[str] = None) -> Tuple[Optional[str], Optional[str], Optional[str]]:
    """(status, reason, None) of a valid result.json, (None, None, why) of a damaged one, all None when absent.
    Valid: the envelope every result shares (contract.result_schema), as `hpml report` needs it, and the
    point's own: its identity names this folder's point number and, when `sweep` is given, this sweep's name.
    A result copied in from another point or sweep is not this point's measurement: counted completed, the
    point would never be run, and resume (which moves it aside, keeping it) could not finish the sweep."""
    path = folder / RESULT_FILE
    try:
        seen = os.stat(path)
        key = (str(path), seen.st_ino, seen.st_size, seen.st_mtime_ns, sweep) if stat.S_ISREG(seen.st_mode) \
            else None
    except (OSError, ValueError):
        key = None
    if key in _RESULT_SEEN:
        return _RESULT_SEEN[key]
    try:
        result = load_json(path, RESULT_LIMIT)
        errors = validate_result(result) or foreign_result(result, point_number(folder), sweep)
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        found = (None, None, f"{RESULT_FILE}: not a valid result: {errors[0]}{more}") if errors else \
            (result["status"], result["reason"], None)
    except FileNotFoundError:
        return None, None, None
    except DamagedFile as error:
        found = None, None, f"{RESULT_FILE}: {error}"
    if key is not None:
        _RESULT_SEEN[key] = found
    return found


def foreign_result(result: Dict, point: Optional[int], sweep: Optional[str]) -> List[str]:
    """One line when a valid result names another point or sweep than the folder it sits in (none when the
    result names no point, or the folder is outside a sweep's layout)."""
    ident = result["identity"]
    if point is not None and ident["point"] is not None and ident["point"] != point:
        return [f"it is the result of point {ident['point']} of sweep {ident['sweep']!r:.60}, not of point {point} "
                "(copied in?)"]
    if sweep is not None and ident["sweep"] != sweep:
        return [f"it is the result of sweep {ident['sweep']!r:.60}, not of this sweep {sweep!r:.60} (copied in?)"]
    return []


def read_point_files(folder: Path, sweep: Optional[str] = None) -> PointFiles:
    """The state a point's files prove. The job's state.json has the last word on a failure; a result is
    written before the job ends, so "running" stays running; but completed needs a valid ok result too."""
    files = PointFiles()
    state = read_state(folder, files.problems)
    word = state.get("state")
    if word == "running":
        files.state = "running"
        files.runner = {k: state[k] for k in ("host", "pid", "started_at") if k in state}
        status, _, damaged = read_result(folder, sweep)
        files.result_ok = status == "ok" and not damaged
        return files
    if word in FINISHED and word != "completed" and word not in STOPPED_FROM_OUTSIDE:
        files.state, files.reason = word, state.get("reason")
        return files
    status, reason, damaged = read_result(folder, sweep)
    if word in STOPPED_FROM_OUTSIDE and not (status == "ok" and not damaged):
        files.state, files.reason = word, state.get("reason")
        return files
    if damaged:
        files.problems.append(damaged)
        files.state, files.reason = "failed", damaged
    elif status is not None:
        files.state, files.reason = ("completed", None) if status == "ok" else (status, reason)
    elif word == "completed":
        files.state, files.reason = "failed", f"its state.json says completed, but it has no {RESULT_FILE}"
    return files


def state_from_files(folder: Path) -> Optional[Tuple[str, Optional[str]]]:
    """(state, reason) that the point's own files prove, or None if they prove nothing yet."""
    return read_point_files(folder).proven


def combine(files: Optional[tuple], scheduler: Optional[Dict[str, str]], has_job: bool,
            scheduler_answered: bool, runner_alive: Optional[bool] = None) -> tuple[str, Optional[str]]:
    """One point's state from what its files prove, what the scheduler reports and whether the process that
    runs it lives (None: cannot tell) (pure). "running" from a file counts only while its runner may live."""
    if files is not None and files[0] == "completed":
        return files
    sched = scheduler["state"] if scheduler else None
    if sched in FINISHED and sched != "completed" and not (sched == "failed" and files and files[0] in OWN_ENDS):
        return sched, files[1] if files else None
    if files is not None and files[0] == "running":
        # a runner gone while the scheduler still holds its job is a job ending (SLURM kills its processes, then
        # records why: a memory kill, a time limit) or requeued: the scheduler's word decides until the job has ended
        if runner_alive is not None and sched not in BUSY:
            return ("running", None) if runner_alive else ("interrupted", RUNNER_GONE)
        if sched == "completed":
            return "failed", ENDED_RUNNING
        if sched is None and scheduler_answered and has_job:
            return "lost", "its state.json says running, but the scheduler no longer knows its job"
        return files
    if files is not None:
        return files
    if sched == "completed":  # SLURM says done, yet no result: the job cannot have run the workload
        return "failed", "the job ended without writing a result"
    if sched is not None:
        return sched, None
    if has_job:
        return ("lost", SCHEDULER_FORGOT) if scheduler_answered else ("pending", None)
    return "not_submitted", None


def point_states(sweep_dir: Path, scheduler: Optional[Dict[str, Dict[str, str]]] = None,
                 manifest: Optional[Dict] = None) -> List[PointState]:
    """scheduler: {job id: {"state": ...}} from scheduler_state, or None to judge by the files alone.
    A running point's runner is looked up in its state.json (host, pid), then, for a local sweep, in the
    manifest's launcher: local jobs live as long as the `hpml launch` that runs them."""
    manifest = manifest or read_manifest(sweep_dir)
    backend = backend_of_manifest(manifest)
    launcher = backend.runners(manifest)
    states = []
    for entry in manifest["points"]:
        job_id = entry.get("job_id")
        record = (scheduler or {}).get(job_id) if job_id else None
        files = read_point_files(point_dir(sweep_dir, entry["point"]), manifest.get("sweep"))
        alive = runner_alive([files.runner] + launcher) if files.state == "running" else None
        state, reason = combine(files.proven, record, bool(job_id), scheduler is not None, alive)
        if files.state == "running" and files.result_ok and (state in STOPPED_FROM_OUTSIDE + ("lost",)
                                                               or reason == ENDED_RUNNING):
            state, reason = "completed", None  # stopped after its ok result was written whole: the work is done
        if state == "not_submitted" and isinstance(entry.get("held_back"), str):
            reason = f"held back by {entry['held_back']}; `hpml resume` submits it"
        if state in FINISHED and state != "completed" and not reason and job_id:
            reason = job_log_reason(backend.job_log(sweep_dir, job_id))
        if state in ("failed", "cancelled") and job_id and record:  # the scheduler ended it: was it for memory?
            killed = memory_limit_kill(backend.job_log(sweep_dir, job_id))
            state, reason = ("out_of_memory", killed) if killed else (state, reason)
        states.append(PointState(point=entry["point"], state=state, reason=reason, job_id=job_id,
                                 overrides=entry.get("overrides", []), problems=files.problems))
    return states


def current_states(sweep_dir: Path) -> List[PointState]:
    """Point states, with the backend's view of the jobs (SLURM: one batched query)."""
    manifest = read_manifest(sweep_dir)
    return point_states(sweep_dir, backend_of_manifest(manifest).job_states(manifest), manifest)


# The ends other than completed and failed, as the progress line names them (after "N failed", only when N > 0):
# an interrupted or cancelled point did not fail, and a user who reads "4 failed" looks for an error that is not there
OTHER_ENDS = {"interrupted": "interrupted", "cancelled": "cancelled", "timeout": "timed out", "oom": "out of memory",
              "out_of_memory": "out of memory", "node_fail": "node failed", "lost": "lost"}


def summary_counts(states: List[PointState]) -> Dict[str, int]:
    """done, running, pending, failed (the state `failed` alone) and total, then each other end that occurred."""
    counts = Counter(s.state for s in states)
    summary = {"done": counts["completed"], "running": counts["running"], "failed": counts["failed"],
               "pending": counts["pending"] + counts["not_submitted"], "total": len(states)}
    for state, name in OTHER_ENDS.items():
        if counts[state]:
            summary[name] = summary.get(name, 0) + counts[state]
    return summary


def progress_line(name: str, states: List[PointState]) -> str:
    c = summary_counts(states)
    others = "".join(f", {c[end]} {end}" for end in dict.fromkeys(OTHER_ENDS.values()) if end in c)
    return (f"[{name}] {c['done']}/{c['total']} done, {c['running']} running, {c['pending']} pending, "
            f"{c['failed']} failed{others}")


def status_table(states: List[PointState]) -> str:
    lines = ["point  state          job id        overrides / reason"]
    for s in states:
        lines.append(f"{s.point:<6} {s.state:<14} {str(s.job_id or '-'):<13} {' '.join(s.overrides) or '(defaults)'}")
        if s.reason and s.state != "completed":
            last = s.reason.strip().splitlines()[-1] if s.reason.strip() else s.reason
            lines.append(f"{'':<6} reason: {last}")
        for problem in s.problems:
            if problem != s.reason:
                lines.append(f"{'':<6} damaged: {problem}")
    return "\n".join(lines)


def record_accounting(sweep_dir: Path, manifest: Dict, states: List[PointState]) -> None:
    """The scheduler's accounting of the ended points' jobs, kept beside their results (SLURM: sacct's
    ConsumedEnergy, launcher/backends/slurm/energy.py); asked once per job, by launch when it waits and by status."""
    ended = {s.point: s.job_id for s in states if s.state in FINISHED and s.job_id}
    if ended:
        backend_of_manifest(manifest).record_accounting(sweep_dir, manifest, ended)


def status_command(sweep_dir: Path) -> int:
    """`hpml status DIR`: the progress line, then one line per point (and its reason when it failed), then the
    report job's line where the sweep has one; one scheduler query (job_states) answers for all of them."""
    manifest = read_manifest(sweep_dir)
    backend = backend_of_manifest(manifest)
    jobs = backend.job_states(manifest)
    states = point_states(sweep_dir, jobs, manifest)
    if folder_problem(sweep_dir) is None:  # status reads: a sweep it may not write (a colleague's) still answers
        record_accounting(sweep_dir, manifest, states)
    print(progress_line(manifest.get("sweep", Path(sweep_dir).name), states))
    print(status_table(states))
    report = backend.report_line(manifest, jobs)
    if report:
        print(report)
    return 0
