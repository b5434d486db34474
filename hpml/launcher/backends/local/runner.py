"""The local runner: a sweep's points as processes on this machine, through submitit's LocalExecutor.

At most cluster.max_parallel points run at a time (1 by default, so the timings of one point are not
disturbed by another); the launch waits until all have run. (The SLURM counterpart: launcher/backends/slurm/submit.py.)

Interrupts. A Ctrl-C (SIGINT to the terminal's whole process group), a SIGTERM or a SIGHUP stops the sweep:
no further point starts, each running point's job is told to stop (SIGTERM to its submitit controller, which
passes it on to the point job; launcher/point_job.py then stops torchrun and records the point as
interrupted), the launcher waits for them a bounded time, and raises SweepInterrupted (one line, exit
128+signal: 130 for Ctrl-C). A point is never read as "failed, start the next one" because of a signal.
submitit's controller would turn a Ctrl-C into "kill my task after 1 s", before the point job could record
anything, so it is started with SIGINT and SIGHUP blocked: only the point job itself reacts to them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, Iterator, List, Optional, Sequence, Set

from hpml.contract.jsonio import read_json, utc_now, write_json_atomic
from hpml.contract.sweep_layout import JOBS_DIR, STATE_FILE, point_dir
from hpml.launcher.backends.base import SweepInterrupted
from hpml.launcher.child_python import python_shell, safe_path_environment
from hpml.launcher.failure_reason import died_before_start
from hpml.launcher.jobspec import JobSpec, ResourceShape, group_by_shape
from hpml.launcher.point_job import INTERRUPTED, STOP_SIGNALS, PointJob, interrupted_reason

if TYPE_CHECKING:  # imported where a job is submitted: a refused or dry-run launch never needs it (issue 41)
    import submitit

# How long a stopped launch waits for its running points to wind down: torchrun gives its workers 30 s
# between SIGTERM and SIGKILL, plus time to start up and write state.json. A second Ctrl-C stops waiting.
WIND_DOWN_S = 45.0
RESEND_S = 1.0  # a point job that had not yet installed its handlers when told to stop is told again
# How often a wait between two polls looks whether a running point has ended (a waitpid on its controller): the
# launch goes on (next point, progress line, return) within this of a point's end, whatever cluster.poll_s is.
END_CHECK_S = 0.2


class StopFlag:
    """Turns the stop signals into a flag the polling loop reads (no KeyboardInterrupt mid-bookkeeping)."""

    def __init__(self) -> None:
        self.signals: List[int] = []
        self.event = threading.Event()

    @property
    def signum(self) -> Optional[int]:
        return self.signals[0] if self.signals else None

    def __call__(self, signum: int, frame: object = None) -> None:
        self.signals.append(signum)
        self.event.set()

    def sleep(self, seconds: float) -> None:
        self.event.wait(seconds)
        self.event.clear()

    @contextlib.contextmanager
    def installed(self) -> Iterator["StopFlag"]:
        previous = {sig: signal.signal(sig, self) for sig in STOP_SIGNALS}
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


@contextlib.contextmanager
def terminal_signals_blocked() -> Iterator[None]:
    """SIGINT and SIGHUP stay pending while a controller is started: the new process inherits the mask (so
    the controller never reacts to a Ctrl-C), and this process gets the signal once the mask is lifted."""
    blocked = {signal.SIGINT, signal.SIGHUP}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def local_job_log(sweep_dir: Path, job_id: str) -> Path:
    """submitit's local executor keeps every job's files side by side in the sweep's jobs/ folder."""
    return Path(sweep_dir) / JOBS_DIR / f"{job_id}_0_log.err"


def local_executor(folder: Path, shape: ResourceShape) -> submitit.LocalExecutor:
    import submitit

    executor = submitit.LocalExecutor(folder=str(folder), python=python_shell())  # not the user's folder first
    executor.update_parameters(timeout_min=shape.time_min, gpus_per_node=shape.gpus_per_node,
                               tasks_per_node=1)  # one task per node: it runs torchrun
    return executor


def run_local(sweep_dir: Path, specs: Sequence[JobSpec], max_parallel: int, poll_s: float,
              on_submit: Callable[[JobSpec, str, int], None], on_tick: Callable[[], None]) -> Dict[int, submitit.Job]:
    """Runs the points on this machine, max_parallel at a time, in point order; returns when all are done.

    on_submit(spec, job_id, array) records each submission; on_tick() is called once per poll and as soon as a
    point ends (progress).
    Raises SweepInterrupted after a stop signal, once the running points have wound down.
    """
    array_of = {spec.point: array for array, (_, group) in enumerate(group_by_shape(specs)) for spec in group}
    queue = sorted(specs, key=lambda spec: spec.point)
    for spec in queue:
        if spec.shape.nodes != 1:
            raise ValueError(f"point {spec.point}: the local cluster has one node; "
                             f"resources.nodes={spec.shape.nodes} needs cluster=slurm")
    cap = max_parallel or len(queue)
    jobs: Dict[int, submitit.Job] = {}
    settled: Set[int] = set()
    with StopFlag().installed() as stop:
        while stop.signum is None:
            settle_early_deaths(sweep_dir, jobs, settled)
            running = sum(not job.done() for job in jobs.values())
            while queue and running < cap and stop.signum is None:
                spec = queue.pop(0)
                with terminal_signals_blocked(), safe_path_environment():
                    job = local_executor(sweep_dir / JOBS_DIR, spec.shape).submit(PointJob(spec))
                jobs[spec.point] = job
                on_submit(spec, job.job_id, array_of[spec.point])
                running += 1
            on_tick()
            if not queue and running == 0:  # every job was settled above, before this last tick
                return jobs
            wait_for_an_end(jobs, running, stop, poll_s)
        wind_down(sweep_dir, jobs, stop)
        on_tick()
    unfinished = [spec.point for spec in specs if spec.point not in jobs or not finished(sweep_dir, spec.point)]
    raise SweepInterrupted(stop.signum, sweep_dir, unfinished)


def wait_for_an_end(jobs: Dict[int, submitit.Job], running: int, stop: StopFlag, poll_s: float) -> None:
    """Waits poll_s, or less: until one of the `running` points ends (at once if one has ended already) or a
    stop signal comes."""
    unfinished = [job for job in jobs.values() if not job.done()]
    deadline = time.monotonic() + poll_s
    while len(unfinished) >= running and stop.signum is None:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        stop.sleep(min(left, END_CHECK_S))
        unfinished = [job for job in unfinished if not job.done()]


def wind_down(sweep_dir: Path, jobs: Dict[int, submitit.Job], stop: StopFlag) -> None:
    """Tells every running point to stop and waits for them, at most WIND_DOWN_S or until a second signal."""
    deadline = time.monotonic() + WIND_DOWN_S
    # A terminal's Ctrl-C or hang-up reaches the point jobs too (one process group): the relay waits once, so that
    # its SIGTERM does not overtake the signal the point records (it did in about 1 run in 4 on a busy machine)
    relay_waits = stop.signum in (signal.SIGINT, signal.SIGHUP)
    while time.monotonic() < deadline and len(stop.signals) < 2:
        running = [job for job in jobs.values() if not job.done()]
        if not running:
            break
        for job in running if not relay_waits else []:
            with contextlib.suppress(ProcessLookupError, OSError):
                os.kill(int(job.job_id), signal.SIGTERM)  # the controller (its pid is the job id) passes it on
        relay_waits = False
        stop.sleep(RESEND_S)
    for point, job in jobs.items():
        if job.done():
            settle_state(sweep_dir, point, stop.signum)


def finished(sweep_dir: Path, point: int) -> bool:
    state = read_json(point_dir(sweep_dir, point) / STATE_FILE, 1 << 20) or {}
    return isinstance(state, dict) and state.get("state") == "completed"


def settle_early_deaths(sweep_dir: Path, jobs: Dict[int, submitit.Job], settled: Set[int]) -> None:
    """A job that ended before its point wrote any state (the job's Python could not import hpml, a broken
    environment, a job killed before it started the point) failed: record it so, with the last meaningful line of
    the job's own log as the reason. Without this the point stayed "pending" until the launch ended and "lost"
    after, with no reason anywhere but the job's log."""
    for point, job in jobs.items():
        if point in settled or not job.done():
            continue
        settled.add(point)
        path = point_dir(sweep_dir, point) / STATE_FILE
        if path.exists() or path.is_symlink():
            continue  # the point said what happened (or a damaged state file says so, as status reports)
        reason = died_before_start(sweep_dir, local_job_log(sweep_dir, job.job_id))
        write_json_atomic(path, {"state": "failed", "reason": reason,
                                 "job_id": job.job_id, "ended_at": utc_now()})


def settle_state(sweep_dir: Path, point: int, signum: int) -> None:
    """A point whose job ended while its state.json still says running was stopped before it could say so
    (its point job was killed, or had not started torchrun): record it as interrupted, so resume reruns it."""
    path = point_dir(sweep_dir, point) / STATE_FILE
    state = read_json(path, 1 << 20)
    if isinstance(state, dict) and state.get("state") == "running":
        write_json_atomic(path, {**state, "state": INTERRUPTED, "reason": interrupted_reason(signum),
                                 "ended_at": utc_now()})
