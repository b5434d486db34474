"""The local backend: the points run as processes of this host, started and watched by the `hpml launch` (or
`hpml resume`) that runs them (launcher/backends/local/runner.py, submitit's local executor underneath)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from hpml.conf.schema import ClusterKind, HpmlConfig
from hpml.launcher.backends.base import Backend, JobStates
from hpml.launcher.backends.local.preflight import local_problems
from hpml.launcher.backends.local.runner import local_job_log, run_local
from hpml.launcher.jobspec import JobSpec
from hpml.launcher.manifest import write_manifest
from hpml.launcher.processes import process_alive


class LocalBackend(Backend):
    kind = ClusterKind.local
    runs_in_this_process = True
    runs_on_this_host = True
    packs_points = False

    def preflight(self, configs: Sequence[HpmlConfig], specs: Sequence[JobSpec]) -> List[str]:
        return local_problems(list(configs))

    def submit(self, sweep_dir: Path, manifest: Dict, specs: Sequence[JobSpec], settings: HpmlConfig,
               on_tick: Callable[[], None]) -> None:
        def record(spec: JobSpec, job_id: str, array: int) -> None:
            manifest["points"][spec.point]["job_id"] = job_id
            write_manifest(sweep_dir, manifest)

        run_local(sweep_dir, specs, settings.cluster.max_parallel, settings.cluster.poll_s, on_submit=record,
                  on_tick=on_tick)

    def job_states(self, manifest: Dict) -> Optional[JobStates]:
        """Local jobs live as long as the `hpml launch` that runs them: once it is gone, a point that never
        finished is lost (resume reruns it). None while the launch still runs, or on another host (judge by the
        files)."""
        launcher = manifest.get("launcher") or {}
        if launcher.get("host") != socket.gethostname() or process_alive(launcher.get("pid")):
            return None
        return {}

    def job_log(self, sweep_dir: Path, job_id: str) -> Path:
        return local_job_log(sweep_dir, job_id)

    def runners(self, manifest: Dict) -> List[Dict]:
        return [manifest.get("launcher") or {}]
