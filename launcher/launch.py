"""`hpml launch`: Hydra composes and validates every point (plan), the sweep is checked against the configs
and the cluster (check), its configs and manifest are written (write), then its points are submitted."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path
from typing import Dict, List, Sequence

import hydra
from omegaconf import DictConfig

from conf.schema import ClusterKind
from contract.sweep_layout import MANIFEST_FILE
from launcher.config_store import register_schemas
from launcher.errors import LaunchError, one_line
from launcher.jobspec import JobSpec
from launcher.manifest import new_manifest, write_manifest
from launcher.planner import Plan, start_plan
from launcher.preflight import config_problems
from launcher.slurm_preflight import preflight as slurm_preflight
from launcher.submission import cluster_kind, run_points

DRY_RUN_FLAG = "--dry-run"


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


def check_new_sweep_dir(plan: Plan) -> Path:
    dirs = {p.sweep_dir for p in plan.points}
    if len(dirs) != 1:
        raise LaunchError(f"the points of one launch landed in {len(dirs)} sweep directories; "
                          "do not sweep over sweep.dir or sweep.name")
    sweep_dir = dirs.pop()
    if (sweep_dir / MANIFEST_FILE).exists():
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
        problems += slurm_preflight(specs)
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
