"""Submitting planned points, shared by `hpml launch` and `hpml resume`: the local runner or SLURM job
arrays, job ids recorded in the manifest, then (unless sweep.wait=false on SLURM) waiting for the end."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Dict, List, Sequence

from conf.schema import ClusterKind, HpmlConfig
from launcher import slurm
from launcher.errors import LaunchError
from launcher.jobspec import JobSpec
from launcher.local_runner import SweepInterrupted, run_local
from launcher.manifest import write_manifest
from launcher.progress import ProgressPrinter, wait_for_sweep
from launcher.status import current_states, status_table


def cluster_kind(specs: Sequence[JobSpec]) -> ClusterKind:
    kinds = {spec.shape.cluster for spec in specs}
    if len(kinds) != 1:
        raise ValueError(f"one sweep runs on one cluster; this one mixes {sorted(k.value for k in kinds)}")
    return kinds.pop()


def run_points(sweep_dir: Path, manifest: Dict, specs: Sequence[JobSpec], settings: HpmlConfig) -> int:
    """Submits the points (local: runs them) and, unless sweep.wait=false on SLURM, waits for them.
    Returns the exit status of the command: 0 when every point completed."""
    name = manifest["sweep"]
    manifest["launcher"] = {"host": socket.gethostname(), "pid": os.getpid()}
    write_manifest(sweep_dir, manifest)
    if settings.cluster.kind == ClusterKind.local:
        def record(spec: JobSpec, job_id: str, array: int) -> None:
            manifest["points"][spec.point]["job_id"] = job_id
            write_manifest(sweep_dir, manifest)

        try:
            run_local(sweep_dir, specs, settings.cluster.max_parallel, settings.cluster.poll_s,
                      on_submit=record, on_tick=ProgressPrinter(sweep_dir, name))
        except SweepInterrupted as stopped:  # not an error of hpml's: one line, and the way on
            print(f"hpml: {stopped}", file=sys.stderr)
            return stopped.exit_code
    else:
        submit_to_slurm(sweep_dir, manifest, specs, settings.cluster.max_parallel, settings.cluster.max_requeues)
        if not settings.sweep.wait:
            print(f"hpml: submitted; follow with `hpml status {sweep_dir}`")
            return 0
        try:
            wait_for_sweep(sweep_dir, name, settings.cluster.poll_s)
        except KeyboardInterrupt:  # Ctrl-C stops the waiting only: the jobs are SLURM's, and keep running
            print(f"hpml: stopped waiting; the jobs keep running: follow with `hpml status {sweep_dir}`, "
                  f"rerun what did not finish with `hpml resume {sweep_dir}`", file=sys.stderr)
            return 130
    states = current_states(sweep_dir)
    print(status_table(states))
    print(f"hpml: report with `hpml report {sweep_dir}`")
    return 0 if all(s.state == "completed" for s in states) else 1


def submit_to_slurm(sweep_dir: Path, manifest: Dict, specs: Sequence[JobSpec], max_parallel: int,
                    max_requeues: int = slurm.MAX_REQUEUES_ON_TIMEOUT) -> None:
    """sbatch, one job array per shape (split at MaxArraySize). Each array's job ids go into the manifest as
    soon as sbatch returns, and its sbatch script into its points' folders. An sbatch refusal leaves the
    points it did not queue "not submitted" (`hpml resume` submits them) and becomes one LaunchError line."""
    config = slurm.scontrol_config()
    manifest["slurm_version"] = slurm.slurm_version()
    submissions: List[Dict] = manifest.setdefault("submissions", [])  # one entry per sbatch, every launch and resume
    new: List[Dict] = []

    def record(array: List[slurm.Submitted]) -> None:
        for item in array:
            entry = manifest["points"][item.spec.point]
            entry["job_id"], entry["array"] = item.job.job_id, item.array
        new.append({"job_id": array[0].job.job_id.split("_")[0], "shape": array[0].spec.shape.describe(),
                    "points": [item.spec.point for item in array]})
        submissions.append(new[-1])
        write_manifest(sweep_dir, manifest)
        slurm.keep_sbatch_scripts(array)

    try:
        slurm.submit_arrays(sweep_dir, specs, max_parallel, slurm.max_array_size(config), on_array=record,
                            max_requeues=max_requeues)
    except slurm.SbatchRefused as refused:
        queued = len(specs) - len(refused.points)
        raise LaunchError(f"sbatch refused point(s) {', '.join(map(str, refused.points))}: {refused.why} "
                          f"({queued} point(s) queued before); the sweep is kept: fix the cause, then "
                          f"`hpml resume {sweep_dir}` submits what is not queued") from refused
    ids = ", ".join(f"{a['job_id']} ({len(a['points'])} point(s))" for a in new)
    print(f"hpml: submitted job array(s) {ids}")
