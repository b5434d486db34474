"""Waiting for a sweep: one progress line, printed whenever it changes (no spinner: logs stay readable
under SLURM)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, List

from hpml.launcher.status import FINISHED, PointState, current_states, point_states, progress_line

MIN_POLL_S = 2.0  # sacct is a database query: do not hammer it


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


def wait_for_sweep(sweep_dir: Path, name: str, poll_s: float) -> None:
    """Returns once every submitted point is finished (completed, failed, cancelled, lost, ...)."""
    printer = ProgressPrinter(sweep_dir, name)
    while True:
        states = current_states(sweep_dir)
        printer.show(states)
        if all(s.state in FINISHED + ("not_submitted",) for s in states):  # held back by a submit limit
            return
        time.sleep(max(poll_s, MIN_POLL_S))
