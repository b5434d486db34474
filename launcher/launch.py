"""`hpml launch`: Hydra composes and validates every point, then the planned points are submitted."""

from __future__ import annotations

import contextlib
import io
import os
import socket
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

import hydra
import yaml
from omegaconf import DictConfig

from conf.schema import ClusterKind, HpmlConfig, config_from_dict
from launcher import slurm
from launcher.config_store import register_schemas
from launcher.errors import one_line
from launcher.jobspec import JobSpec, group_by_shape, jobspec_of
from launcher.planner import CONFIG_FILE, Plan, start_plan
from launcher.preflight import config_problems
from launcher.scheduler_state import scheduler_states
from launcher.status import FINISHED, PointState, point_states, progress_line, status_table
from launcher.submission import cluster_kind, run_local
from launcher.sweep_dir import (MANIFEST, MANIFEST_VERSION, RESULT_FILE, STATE_FILE, point_dir, read_manifest,
                                write_manifest)


class LaunchError(Exception):
    """A problem the user can fix; printed as one line, nothing submitted."""


def plan_sweep(argv: Sequence[str]) -> Plan:
    """Runs Hydra over the command line; returns the planned points (none for --cfg, --help, ...)."""
    register_schemas()
    plan = start_plan()

    @hydra.main(version_base="1.3", config_path="pkg://conf", config_name="config")
    def hydra_app(cfg: DictConfig) -> None:
        raise AssertionError("unreachable: every launch is a multirun planned by hpml's sweeper")

    saved_argv, saved_full_error = sys.argv, os.environ.get("HYDRA_FULL_ERROR")
    sys.argv = ["hpml-launch", *argv]
    os.environ["HYDRA_FULL_ERROR"] = "1"  # let errors reach us, to be printed as one line
    hydra_stderr = io.StringIO()  # Hydra's own multi-line error report, replaced by one line
    try:
        with contextlib.redirect_stderr(hydra_stderr):
            hydra_app()
    except SystemExit:
        sys.stderr.write(hydra_stderr.getvalue())
        raise
    except Exception as error:
        raise LaunchError(one_line(error)) from error
    else:
        sys.stderr.write(hydra_stderr.getvalue())
    finally:
        sys.argv = saved_argv
        if saved_full_error is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
    return plan


def new_manifest(plan: Plan, argv: Sequence[str]) -> Dict:
    specs = [p.spec for p in plan.points]
    first = plan.points[0]
    arrays = group_by_shape(specs)
    array_of = {spec.point: i for i, (_, group) in enumerate(arrays) for spec in group}
    return {
        "manifest_version": MANIFEST_VERSION,
        "sweep": first.config.sweep.name,
        "dir": str(first.sweep_dir),
        "argv": list(argv),
        "cluster": first.spec.shape.cluster.value,
        "arrays": [{"array": i, "shape": shape.describe(), "points": [s.point for s in group]}
                   for i, (shape, group) in enumerate(arrays)],
        "points": [{"point": s.point, "overrides": list(s.overrides), "workload": s.workload,
                    "world_size": s.shape.world_size, "resources": s.shape.describe(),
                    "array": array_of[s.point], "job_id": None} for s in sorted(specs, key=lambda s: s.point)],
    }


def check_new_sweep_dir(plan: Plan) -> Path:
    dirs = {p.sweep_dir for p in plan.points}
    if len(dirs) != 1:
        raise LaunchError(f"the points of one launch landed in {len(dirs)} sweep directories; "
                          "do not sweep over sweep.dir or sweep.name")
    sweep_dir = dirs.pop()
    if (sweep_dir / MANIFEST).exists():
        raise LaunchError(f"sweep.dir={sweep_dir} already holds a sweep; use `hpml resume {sweep_dir}` "
                          "or choose another sweep.dir")
    return sweep_dir


def point_latest_at(sweep_dir: Path) -> None:
    """<sweep root>/latest -> the newest sweep, so `hpml report sweeps/latest` needs no timestamp."""
    latest = sweep_dir.parent / "latest"
    try:
        if latest.is_symlink():
            latest.unlink()
        if not latest.exists():
            latest.symlink_to(sweep_dir.name)
    except OSError:  # a file system without symlinks only loses the shortcut
        pass


class ProgressPrinter:
    """Prints the progress line whenever it changes (no spinner: logs stay readable under SLURM)."""

    def __init__(self, sweep_dir: Path, name: str, out: Callable[[str], None] = print):
        self.sweep_dir, self.name, self.out, self.last = sweep_dir, name, out, ""

    def __call__(self) -> None:
        self.show(point_states(self.sweep_dir))

    def show(self, states: List[PointState]) -> None:
        line = progress_line(self.name, states)
        if line != self.last:
            self.out(line)
            self.last = line


DRY_RUN_FLAG = "--dry-run"


def launch(argv: Sequence[str]) -> int:
    dry_run = DRY_RUN_FLAG in argv
    argv = [arg for arg in argv if arg != DRY_RUN_FLAG]
    plan = plan_sweep(argv)
    if not plan.points:
        return 0  # --cfg, --help, --info: Hydra has printed what was asked
    sweep_dir = check_new_sweep_dir(plan)
    specs: List[JobSpec] = [p.spec for p in plan.points]
    kind = cluster_kind(specs)
    problems = config_problems([p.config for p in plan.points])
    if kind == ClusterKind.slurm:
        problems += slurm.preflight(specs)
    if problems:
        raise LaunchError("\n".join(problems))  # one line per problem, nothing written or queued
    manifest = new_manifest(plan, argv)
    if dry_run:
        print_plan(manifest)
        return 0
    plan.write_configs()
    write_manifest(sweep_dir, manifest)
    point_latest_at(sweep_dir)
    print(f"hpml: sweep {manifest['sweep']}: {len(specs)} point(s) in {len(manifest['arrays'])} array(s) "
          f"-> {sweep_dir}")
    return run_points(sweep_dir, manifest, specs, plan.points[0].config)


def print_plan(manifest: Dict) -> None:
    """--dry-run: what the launch would run, every point composed and checked; nothing written or submitted."""
    print(f"hpml: sweep {manifest['sweep']}: {len(manifest['points'])} point(s) in {len(manifest['arrays'])} "
          f"array(s) -> {manifest['dir']} (dry run: nothing written, nothing submitted)")
    for point in manifest["points"]:
        print(f"{point['point']:<6} {point['resources']:<40} {' '.join(point['overrides'])}")


def run_points(sweep_dir: Path, manifest: Dict, specs: Sequence[JobSpec], settings: HpmlConfig) -> int:
    """Submits the points (local: runs them) and, unless sweep.wait=false on SLURM, waits for them."""
    name = manifest["sweep"]
    manifest["launcher"] = {"host": socket.gethostname(), "pid": os.getpid()}
    write_manifest(sweep_dir, manifest)
    if settings.cluster.kind == ClusterKind.local:
        def record(spec: JobSpec, job_id: str, array: int) -> None:
            manifest["points"][spec.point]["job_id"] = job_id
            write_manifest(sweep_dir, manifest)

        run_local(sweep_dir, specs, settings.cluster.max_parallel, settings.cluster.poll_s,
                  on_submit=record, on_tick=ProgressPrinter(sweep_dir, name))
    else:
        submit_to_slurm(sweep_dir, manifest, specs, settings.cluster.max_parallel)
        if not settings.sweep.wait:
            print(f"hpml: submitted; follow with `hpml status {sweep_dir}`")
            return 0
        wait_for_sweep(sweep_dir, name, settings.cluster.poll_s)
    states = current_states(sweep_dir)
    print(status_table(states))
    print(f"hpml: report with `hpml report {sweep_dir}`")
    return 0 if all(s.state == "completed" for s in states) else 1


def submit_to_slurm(sweep_dir: Path, manifest: Dict, specs: Sequence[JobSpec], max_parallel: int) -> None:
    config = slurm.scontrol_config()
    submitted = slurm.submit_arrays(sweep_dir, specs, max_parallel, slurm.max_array_size(config))
    manifest["slurm_version"] = slurm.slurm_version()
    submissions = []  # one entry per sbatch (array), appended to by every launch and resume
    for item in submitted:
        entry = manifest["points"][item.spec.point]
        entry["job_id"], entry["array"] = item.job.job_id, item.array
        array_id = item.job.job_id.split("_")[0]
        if not submissions or submissions[-1]["job_id"] != array_id:
            submissions.append({"job_id": array_id, "shape": item.spec.shape.describe(), "points": []})
        submissions[-1]["points"].append(item.spec.point)
    manifest.setdefault("submissions", []).extend(submissions)
    write_manifest(sweep_dir, manifest)
    slurm.keep_sbatch_scripts(submitted)
    ids = ", ".join(f"{a['job_id']} ({len(a['points'])} point(s))" for a in submissions)
    print(f"hpml: submitted job array(s) {ids}")


def current_states(sweep_dir: Path) -> List[PointState]:
    """Point states, asking the scheduler (once, batched) when the sweep ran on SLURM."""
    manifest = read_manifest(sweep_dir)
    if manifest.get("cluster") != ClusterKind.slurm.value:
        return point_states(sweep_dir, local_jobs(manifest))
    jobs, _source = scheduler_states([p["job_id"] for p in manifest["points"] if p.get("job_id")])
    return point_states(sweep_dir, jobs if _source != "none" else None)


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
    except PermissionError:
        return True
    return True


def wait_for_sweep(sweep_dir: Path, name: str, poll_s: float) -> None:
    printer = ProgressPrinter(sweep_dir, name)
    while True:
        states = current_states(sweep_dir)
        printer.show(states)
        if all(s.state in FINISHED for s in states):
            return
        time.sleep(max(poll_s, 2.0))  # sacct is a database query: do not hammer it


def show_status(sweep_dir: Path) -> int:
    manifest = read_manifest(sweep_dir)
    states = current_states(sweep_dir)
    print(progress_line(manifest["sweep"], states))
    print(status_table(states))
    return 0


def resume(sweep_dir: Path, wait: bool = True) -> int:
    """Resubmits the points that failed, were cancelled or lost, or never ran; completed points and their
    results are never touched, and points still pending or running are left alone."""
    sweep_dir = Path(sweep_dir).resolve()
    manifest = read_manifest(sweep_dir)
    states = current_states(sweep_dir)
    rerun = [s for s in states if s.state not in ("completed", "pending", "running")]
    busy = sum(s.state in ("pending", "running") for s in states)
    if not rerun:
        print(f"hpml: nothing to resume in {sweep_dir}: {len(states) - busy} completed, {busy} pending or running")
        return 0
    specs = [prepare_rerun(sweep_dir, manifest["points"][s.point]) for s in rerun]
    settings = config_from_dict(yaml.safe_load((Path(specs[0].point_dir) / CONFIG_FILE).read_text()))
    settings.sweep.wait = wait
    if settings.cluster.kind == ClusterKind.slurm:
        problems = slurm.preflight(specs)
        if problems:
            raise LaunchError("\n".join(problems))
    write_manifest(sweep_dir, manifest)
    print(f"hpml: resuming {len(specs)} of {len(states)} point(s) of {manifest['sweep']}: "
          f"{', '.join(str(s.point) for s in specs)}")
    return run_points(sweep_dir, manifest, specs, settings)


def prepare_rerun(sweep_dir: Path, entry: Dict) -> JobSpec:
    """Moves the last attempt's files aside (points/<n>/attempts/<k>/) and rebuilds the point's JobSpec
    from its config.yaml. The epoch checkpoint stays, so the rerun resumes from it."""
    folder = point_dir(sweep_dir, entry["point"])
    attempt = folder / "attempts" / str(len(entry.get("previous_job_ids", [])))
    for name in (RESULT_FILE, STATE_FILE, "logs"):
        if (folder / name).exists():
            attempt.mkdir(parents=True, exist_ok=True)
            (folder / name).rename(attempt / name)
    if entry.get("job_id"):
        entry.setdefault("previous_job_ids", []).append(entry["job_id"])
    entry["job_id"] = None
    config = config_from_dict(yaml.safe_load((folder / CONFIG_FILE).read_text()))
    return jobspec_of(config, entry["point"], str(folder), entry["overrides"])
