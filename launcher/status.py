"""Each point's state, from the sweep's own files (result.json, state.json, manifest.json)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

from launcher.sweep_dir import RESULT_FILE, STATE_FILE, point_dir, read_json, read_manifest

# A point is finished when its state is one of these; resume reruns the ones not "completed".
FINISHED = ("completed", "failed", "oom", "timeout", "cancelled", "out_of_memory", "node_fail")


@dataclass
class PointState:
    point: int
    state: str  # not_submitted | pending | running | completed | failed | oom | timeout | ...
    reason: Optional[str]
    job_id: Optional[str]
    overrides: List[str]


def state_from_files(folder: Path) -> tuple[str, Optional[str]] | None:
    """The state the point's own files prove, or None if they prove nothing yet."""
    result = read_json(folder / RESULT_FILE)
    if result is not None and result.get("status") == "ok":
        return "completed", None
    state = read_json(folder / STATE_FILE)
    if state is not None and state.get("state") in FINISHED + ("running",):
        return state["state"], state.get("reason")
    if result is not None:  # the workload wrote a failure but the job has not recorded its end yet
        return result.get("status", "failed"), result.get("reason")
    return None


def point_states(sweep_dir: Path) -> List[PointState]:
    manifest = read_manifest(sweep_dir)
    states = []
    for entry in manifest["points"]:
        found = state_from_files(point_dir(sweep_dir, entry["point"]))
        if found is None:
            found = ("pending", None) if entry.get("job_id") else ("not_submitted", None)
        states.append(PointState(point=entry["point"], state=found[0], reason=found[1],
                                 job_id=entry.get("job_id"), overrides=entry["overrides"]))
    return states


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
