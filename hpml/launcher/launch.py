"""`hpml launch`: Hydra composes and validates every point (plan), the sweep is checked against the configs
and the cluster (check), its configs and manifest are written (write), then its points are submitted."""

from __future__ import annotations

import contextlib
import io
import os
import sys
import warnings
from pathlib import Path
from typing import Dict, List, Sequence

import hydra
from omegaconf import DictConfig

from hpml.conf.validation import shown
from hpml.contract.folders import folder_problem
from hpml.contract.sweep_layout import MANIFEST_FILE
from hpml.launcher.config_store import register_schemas
from hpml.launcher.errors import LaunchError, one_line
from hpml.launcher.jobspec import JobSpec
from hpml.launcher.manifest import new_manifest, write_manifest
from hpml.launcher.override_errors import keyless_override
from hpml.launcher.planner import Plan, start_plan
from hpml.launcher.preflight import sweep_problems
from hpml.launcher.submission import run_points
from hpml.launcher.sweep_lock import sweep_lock

DRY_RUN_FLAG = "--dry-run"
MULTIRUN_FLAGS = ("-m", "--multirun")  # every launch is a multirun already (conf/config.yaml)
HELP_FLAGS = ("-h", "--help")
MAX_NAME_BYTES = 255  # a folder name's limit on common file systems


def plan_sweep(argv: Sequence[str]) -> Plan:
    """Runs Hydra over the command line; returns the planned points (none for --cfg, --help, ...)."""
    register_schemas()
    plan = start_plan()

    @hydra.main(version_base="1.3", config_path="pkg://hpml.conf", config_name="config")
    def hydra_app(cfg: DictConfig) -> None:
        raise AssertionError("unreachable: every launch is a multirun planned by hpml's sweeper")

    saved_argv, saved_full_error = sys.argv, os.environ.get("HYDRA_FULL_ERROR")
    sys.argv = ["hpml-launch", *argv]
    os.environ["HYDRA_FULL_ERROR"] = "1"  # let errors reach us, to be printed as one line
    hydra_stderr = io.StringIO()  # Hydra's own multi-line error report, replaced by one line
    try:
        with contextlib.redirect_stderr(hydra_stderr), warnings.catch_warnings():
            # conf/config.yaml searches the user's ./conf for presets; that folder is optional
            warnings.filterwarnings("ignore", message=r"provider=hydra\.searchpath in main, path=conf is not")
            with mode_known_as_multirun():
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


def checked_arguments(argv: Sequence[str]) -> List[str]:
    """The command line for Hydra: -m/--multirun moved to the front wherever they stand (Hydra's parser takes
    them only before the overrides); an argument with a line break, or an override without a key, is refused
    in one line before Hydra sees it."""
    kept = ["--multirun"] if any(arg in MULTIRUN_FLAGS for arg in argv) else []
    for arg in argv:
        if arg in MULTIRUN_FLAGS or arg == DRY_RUN_FLAG:
            continue
        key, _, value = arg.partition("=")
        if any(c in arg for c in "\n\r\0"):
            raise LaunchError(f"{key}={shown(value)} is not allowed: one line (no line break or NUL)")
        keyless = keyless_override(arg)
        if keyless:
            raise LaunchError(keyless)
        if key.lstrip("+~") == "hydra.mode":
            raise LaunchError(f"hydra.mode={shown(value)} is not allowed: every hpml launch is a multirun planned by "
                              "hpml's sweeper (conf/config.yaml); leave hydra.mode out")
        kept.append(arg)
    return kept


@contextlib.contextmanager
def mode_known_as_multirun():
    """Hydra 1.3 composes the whole config once only to read hydra.mode (Hydra.get_mode), then composes it again
    for the multirun. Every hpml launch is a multirun (conf/config.yaml; checked_arguments refuses hydra.mode), so
    that first composition, about 0.4 s of CPU a launch, is skipped by answering MULTIRUN."""
    from hydra._internal.hydra import Hydra
    from hydra.types import RunMode

    original = Hydra.get_mode
    Hydra.get_mode = lambda self, config_name, overrides: RunMode.MULTIRUN
    try:
        yield
    finally:
        Hydra.get_mode = original


def check_inside_root(plan: Plan) -> None:
    """Nothing is written outside sweep.root: the sweep folder must lie inside it once resolved (a
    sweep.name or sweep.dir with '..' must not climb out), and every folder name must fit the file system."""
    for point in plan.points:
        root = Path(point.config.sweep.root).resolve()
        if root not in point.sweep_dir.parents:
            raise LaunchError(f"sweep.dir={shown(str(point.sweep_dir))} is not allowed: a folder inside "
                              f"sweep.root={root}; change sweep.root to the folder that should hold the sweep")
        long = [part for part in point.sweep_dir.parts if len(part.encode()) > MAX_NAME_BYTES]
        if long:
            raise LaunchError(f"sweep.dir={shown(str(point.sweep_dir))} is not allowed: folder names of at most "
                              f"{MAX_NAME_BYTES} bytes; shorten sweep.name or sweep.dir")


def check_new_sweep_dir(plan: Plan) -> Path:
    dirs = {p.sweep_dir for p in plan.points}
    if len(dirs) != 1:
        raise LaunchError(f"the points of one launch landed in {len(dirs)} sweep directories; "
                          "do not sweep over sweep.dir or sweep.name")
    check_inside_root(plan)
    sweep_dir = dirs.pop()
    problem = folder_problem(sweep_dir)
    if problem:
        raise LaunchError(f"sweep.dir={shown(str(sweep_dir))} is not allowed: {problem}; change sweep.root")
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
    argv = checked_arguments(argv)
    if any(arg in HELP_FLAGS for arg in argv):
        try:
            plan_sweep(argv)
        except SystemExit as done:  # Hydra exits once the help is printed
            if done.code:
                raise
        return 0
    plan = plan_sweep(argv)
    if not plan.points:
        return 0  # --cfg, --info: Hydra has printed what was asked (an empty sweep is refused by the sweeper)
    sweep_dir = check_new_sweep_dir(plan)
    specs: List[JobSpec] = [p.spec for p in plan.points]
    problems = sweep_problems([p.config for p in plan.points], specs, dry_run)
    if problems:
        raise LaunchError("\n".join(problems))  # one line per problem, nothing written or queued
    manifest = new_manifest(plan, argv)
    if dry_run:
        print_plan(manifest)
        return 0
    plan.write_configs()
    with sweep_lock(sweep_dir, "launch"):  # held before the manifest exists: no resume runs a point beside us
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
