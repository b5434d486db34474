"""Submitting planned points, shared by `hpml launch` and `hpml resume`: through the sweep's backend
(launcher/backends/), job ids recorded in the manifest, then (unless sweep.wait=false) waiting for the end."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Dict, Sequence

from hpml.conf.schema import HpmlConfig
from hpml.launcher.backends import SweepInterrupted, backend_of
from hpml.launcher.jobspec import JobSpec
from hpml.launcher.manifest import write_manifest
from hpml.launcher.progress import ProgressPrinter, wait_for_sweep
from hpml.launcher.status import current_states, record_accounting, status_table


def run_points(sweep_dir: Path, manifest: Dict, specs: Sequence[JobSpec], settings: HpmlConfig) -> int:
    """Submits the points through the sweep's backend and, unless it queued them with sweep.wait=false, waits
    for them. Returns the exit status of the command: 0 when every point completed."""
    name = manifest["sweep"]
    backend = backend_of(settings.cluster.kind)
    manifest["launcher"] = {"host": socket.gethostname(), "pid": os.getpid()}
    write_manifest(sweep_dir, manifest)
    try:
        backend.submit(sweep_dir, manifest, specs, settings, on_tick=ProgressPrinter(sweep_dir, name))
    except SweepInterrupted as stopped:  # not an error of hpml's: one line, and the way on
        print(f"hpml: {stopped}", file=sys.stderr)
        return stopped.exit_code
    if not backend.runs_in_this_process:
        if not settings.sweep.wait or backend.has_report_job(manifest):  # a resume keeps the sweep's report job
            backend.queue_report(sweep_dir, manifest, settings)
        if not settings.sweep.wait:
            print(f"hpml: submitted; follow with `hpml status {sweep_dir}`")
            return 0
        try:
            wait_for_sweep(sweep_dir, name, settings.cluster.poll_s, settings.cluster.poll_max_s)
        except KeyboardInterrupt:  # Ctrl-C stops the waiting only: the jobs are the scheduler's, and keep running
            print(f"hpml: stopped waiting; the jobs keep running: follow with `hpml status {sweep_dir}`, "
                  f"rerun what did not finish with `hpml resume {sweep_dir}`", file=sys.stderr)
            return 130
    states = current_states(sweep_dir)
    record_accounting(sweep_dir, manifest, states)
    print(status_table(states))
    print(f"hpml: report with `hpml report {sweep_dir}`")
    return 0 if all(s.state == "completed" for s in states) else 1
