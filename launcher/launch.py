"""`hpml launch`: Hydra composes and validates every point, then the planned points are submitted."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path
from typing import Callable, Dict, List, Sequence

import hydra
from omegaconf import DictConfig

from conf.schema import ClusterKind
from launcher.config_store import register_schemas
from launcher.errors import one_line
from launcher.jobspec import JobSpec, group_by_shape
from launcher.preflight import config_problems
from launcher.planner import Plan, start_plan
from launcher.status import point_states, progress_line, status_table
from launcher.submission import cluster_kind, run_local
from launcher.sweep_dir import MANIFEST, MANIFEST_VERSION, read_manifest, write_manifest


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


class ProgressPrinter:
    """Prints the progress line whenever it changes (no spinner: logs stay readable under SLURM)."""

    def __init__(self, sweep_dir: Path, name: str, out: Callable[[str], None] = print):
        self.sweep_dir, self.name, self.out, self.last = sweep_dir, name, out, ""

    def __call__(self) -> None:
        line = progress_line(self.name, point_states(self.sweep_dir))
        if line != self.last:
            self.out(line)
            self.last = line


def launch(argv: Sequence[str]) -> int:
    plan = plan_sweep(argv)
    if not plan.points:
        return 0  # --cfg, --help, --info: Hydra has printed what was asked
    sweep_dir = check_new_sweep_dir(plan)
    problems = config_problems([p.config for p in plan.points])
    if problems:
        raise LaunchError("; ".join(problems))
    specs: List[JobSpec] = [p.spec for p in plan.points]
    kind = cluster_kind(specs)
    manifest = new_manifest(plan, argv)
    plan.write_configs()
    write_manifest(sweep_dir, manifest)
    name = manifest["sweep"]
    print(f"hpml: sweep {name}: {len(specs)} point(s) in {len(manifest['arrays'])} array(s) -> {sweep_dir}")
    if kind == ClusterKind.local:
        def record(spec: JobSpec, job_id: str, array: int) -> None:
            manifest["points"][spec.point]["job_id"] = job_id
            write_manifest(sweep_dir, manifest)

        cap = plan.points[0].config.cluster.max_parallel
        poll = plan.points[0].config.cluster.poll_s
        run_local(sweep_dir, specs, cap, poll, on_submit=record, on_tick=ProgressPrinter(sweep_dir, name))
    else:
        raise LaunchError("cluster=slurm is not available yet")
    states = point_states(sweep_dir)
    print(status_table(states))
    print(f"hpml: report with `hpml report {sweep_dir}`")
    return 0 if all(s.state == "completed" for s in states) else 1


def show_status(sweep_dir: Path) -> int:
    manifest = read_manifest(sweep_dir)
    states = point_states(sweep_dir)
    print(progress_line(manifest["sweep"], states))
    print(status_table(states))
    return 0
