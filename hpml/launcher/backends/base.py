"""What a cluster backend is: what `hpml launch`, `hpml resume` and `hpml status` ask of the place where points
run (the members below; docs/adding-a-backend.md has them in one table). Everything that differs between
running locally and on SLURM is behind these, and each backend's code is in its own folder (backends/local/,
backends/slurm/); the callers never branch on the cluster kind and never import a backend's module."""

from __future__ import annotations

import signal
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from hpml.conf.schema import ClusterKind, HpmlConfig
from hpml.launcher.errors import LaunchError
from hpml.launcher.grow import JobResources
from hpml.launcher.jobspec import JobSpec

# {job id: {"state": <scheduler state, lower case>, ...}}; see launcher/backends/slurm/states.py
JobStates = Dict[str, Dict[str, str]]


class SweepInterrupted(Exception):
    """The launch was stopped by a signal; the message is one line."""

    def __init__(self, signum: int, sweep_dir: Path, unfinished: List[int]):
        self.exit_code = 128 + signum
        points = ", ".join(map(str, unfinished)) or "none"
        super().__init__(f"interrupted by {signal.Signals(signum).name}; unfinished point(s): {points}; "
                         f"finish the sweep with `hpml resume {sweep_dir}`")


class Backend(ABC):
    kind: ClusterKind
    # True where submit() runs the points and returns once they have ended (local); False where it queues them
    # and returns at once (SLURM), and the caller waits, unless sweep.wait=false.
    runs_in_this_process: bool
    # Whether the points run on the machine that launches them, so that this host's memory and GPUs are theirs
    # (local); False where they run on other machines (SLURM's compute nodes). The preflight places each point
    # with it (backends.place): a workload's check compares the point with this host only where it is True.
    runs_on_this_host: bool
    # The cluster keys whose allowed values depend on the kind, checked for every planned point by
    # backends.check_config: whether one job may run several sweep points in turn (cluster.points_per_job > 1);
    # False where the points run in turn already (local).
    packs_points: bool

    @abstractmethod
    def preflight(self, configs: Sequence[HpmlConfig], specs: Sequence[JobSpec]) -> List[str]:
        """Problems of these points against this machine or cluster, one line each; [] when they fit. Asked
        before anything is written or queued, by launch and by resume alike (launcher/preflight.py)."""

    @abstractmethod
    def submit(self, sweep_dir: Path, manifest: Dict, specs: Sequence[JobSpec], settings: HpmlConfig,
               on_tick: Callable[[], None]) -> None:
        """Runs or queues the points, recording each job id in the manifest as it is known. Raises
        SweepInterrupted when a signal stops the sweep, LaunchError when the scheduler refuses it (the points it
        did not take stay not_submitted)."""

    @abstractmethod
    def job_states(self, manifest: Dict) -> Optional[JobStates]:
        """The scheduler's view of the sweep's jobs, in as few calls as it takes; None where it cannot be asked
        (the points are then judged by their own files)."""

    @abstractmethod
    def job_log(self, sweep_dir: Path, job_id: str) -> Path:
        """The job's own stderr: where a job that died before its point started says why."""

    def record_accounting(self, sweep_dir: Path, manifest: Dict, ended: Dict[int, str]) -> None:
        """Keeps what the scheduler's accounting says about the ended points' jobs ({point: job id}) in the points'
        folders, for the report (which reads files only). Nothing where there is no accounting (local)."""

    def queue_report(self, sweep_dir: Path, manifest: Dict, settings: HpmlConfig) -> None:
        """Queues `hpml report` to run by itself once every job of the sweep has ended, for a sweep nobody waits
        for (sweep.wait=false), recording it in the manifest. A backend whose submit() runs the points itself
        needs none: the launch that ran them is there at the end."""

    def has_report_job(self, manifest: Dict) -> bool:
        """Whether the sweep has a report job queued already (a resume then queues a new one after its arrays)."""
        return False

    def report_line(self, manifest: Dict, jobs: Optional[JobStates]) -> Optional[str]:
        """`hpml status`'s line for the sweep's report job; None where it has none."""
        return None

    def job_resources(self, job_ids: Dict[int, str], specs: Sequence[JobSpec]) -> Dict[int, JobResources]:
        """For `hpml resume --grow`: per point, the memory and time its last job (job_ids[point]) had and the most
        the cluster gives. A backend whose points run without such limits refuses --grow in one line."""
        raise LaunchError(f"hpml resume --grow: points of cluster={self.kind.value} run without a memory or time "
                          "limit to grow; use `hpml resume` (or change resources.*)")

    @abstractmethod
    def runners(self, manifest: Dict) -> List[Dict]:
        """Processes ({"host", "pid"}) whose life proves that a point marked running still runs, besides the one in
        its state.json."""
