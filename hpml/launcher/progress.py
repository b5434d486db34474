"""Waiting for a sweep: one progress line, printed whenever it changes (no spinner: logs stay readable
under SLURM)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, List

from hpml.launcher.status import FINISHED, PointState, current_states, point_states, progress_line

MIN_POLL_S = 2.0  # each look asks the scheduler (squeue, and sacct for jobs that left the queue): not faster


class PollBackoff:
    """The pause before the next look at a waiting sweep: `first_s` at the start and after every change, doubled
    while nothing changes, never above `cap_s` (docs/decisions.md, issue 35: a sweep that waits in the queue for
    hours costs the controller one squeue every cap_s, however many points it has)."""

    def __init__(self, first_s: float, cap_s: float):
        self.first_s = max(first_s, MIN_POLL_S)
        self.cap_s = max(cap_s, self.first_s)
        self.pause_s = self.first_s

    def after(self, changed: bool) -> float:
        """The pause to take after a look that saw a change (or not)."""
        self.pause_s = self.first_s if changed else min(self.pause_s * 2, self.cap_s)
        return self.pause_s


class ProgressPrinter:
    """Prints the progress line whenever it changes."""

    def __init__(self, sweep_dir: Path, name: str, out: Callable[[str], None] = print):
        self.sweep_dir, self.name, self.out, self.last = sweep_dir, name, out, ""

    def __call__(self) -> None:
        self.show(point_states(self.sweep_dir))

    def show(self, states: List[PointState]) -> None:
        line = progress_line(self.name, states)
        if line != self.last:
            self.out(line)
            self.last = line


def wait_for_sweep(sweep_dir: Path, name: str, poll_s: float, poll_max_s: float) -> None:
    """Returns once every submitted point is finished (completed, failed, cancelled, lost, ...). Each look is one
    current_states (SLURM: one squeue, and one sacct only for jobs that left the queue); the pause between looks
    backs off while the points' states stay as they were (PollBackoff)."""
    printer = ProgressPrinter(sweep_dir, name)
    backoff, seen = PollBackoff(poll_s, poll_max_s), None
    while True:
        states = current_states(sweep_dir)
        printer.show(states)
        if all(s.state in FINISHED + ("not_submitted",) for s in states):  # held back by a submit limit
            return
        now = [(s.state, s.job_id) for s in states]
        # the first look counts as a change: the pause starts at poll_s
        time.sleep(backoff.after(changed=now != seen))
        seen = now
