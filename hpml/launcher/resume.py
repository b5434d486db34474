"""`hpml resume DIR`: resubmits the points that failed, were cancelled or lost, or never ran, after the same
preflight as `hpml launch` (launcher/preflight.sweep_problems) on the points it would queue.

Completed points and their results are never touched, and points still pending or running are left alone.
A rerun point's last attempt is moved aside (points/<n>/attempts/<k>/, with its config.yaml and attempt.json: job id,
end, resources); its epoch checkpoint stays, so the rerun continues from it. With --grow, a point that ran out of
memory or time gets twice as much in its config.yaml first (launcher/grow.py; the cluster's side:
Backend.job_resources), or is left out with one line when cluster.max_attempts or its partition stops it.
A config.yaml written by an earlier hpml (e.g. `workload.compile: false`, before the key took a mode name) is read
through conf/migrations.py and written back in today's schema when its point is rerun, one line per key changed;
the file as it was stays in the moved attempt's folder.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import yaml

from hpml.conf.migrations import migrated
from hpml.conf.schema import HpmlConfig, config_from_dict
from hpml.contract.folders import folder_problem
from hpml.contract.jsonio import read_json, write_json_atomic
from hpml.contract.sweep_layout import (
    ATTEMPT_RECORD,
    ATTEMPTS_DIR,
    CONFIG_FILE,
    LOGS_DIR,
    RESULT_FILE,
    STATE_FILE,
    point_dir,
)
from hpml.contract.telemetry_format import SIDECAR_GLOB
from hpml.launcher.backends import backend_of_manifest, check_config
from hpml.launcher.errors import LaunchError, one_line
from hpml.launcher.grow import GROWS, Growth, JobResources, growth
from hpml.launcher.jobspec import JobSpec, jobspec_of
from hpml.launcher.manifest import read_manifest, write_manifest
from hpml.launcher.preflight import sweep_problems
from hpml.launcher.status import BUSY, PointState, current_states
from hpml.launcher.submission import run_points
from hpml.launcher.sweep_lock import sweep_lock


def resume(sweep_dir: Path, wait: bool = True, grow: bool = False) -> int:
    sweep_dir = Path(sweep_dir).resolve()
    read_manifest(sweep_dir)  # not a sweep, or a damaged one: refused before a lock file is made
    problem = folder_problem(sweep_dir)  # its lock, moved attempts and new results are written there
    if problem:
        raise LaunchError(f"cannot resume {sweep_dir}: {problem}; nothing was moved or submitted")
    with sweep_lock(sweep_dir, "resume"):  # states read, files moved and points run by this resume alone
        return _resume(sweep_dir, wait, grow)


def _resume(sweep_dir: Path, wait: bool, grow: bool = False) -> int:
    manifest = read_manifest(sweep_dir)
    states = current_states(sweep_dir)
    rerun = [s for s in states if s.state not in ("completed", *BUSY)]
    busy = sum(s.state in BUSY for s in states)
    if not rerun:
        print(f"hpml: nothing to resume in {sweep_dir}: {len(states) - busy} completed, {busy} pending or running")
        return 0
    problems = [problem for s in rerun for problem in rerun_problems(sweep_dir, manifest["points"][s.point])]
    if problems:  # before any file is moved: a resume that stops half-way would leave attempts half-moved
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise LaunchError(f"cannot resume {sweep_dir}: {problems[0]}{more}; nothing was moved or submitted")
    grown: Dict[int, Growth] = {}
    if grow:  # before the preflight, which then checks the grown resources
        rerun, grown = grow_points(sweep_dir, manifest, rerun)
        if not rerun:
            print(f"hpml: nothing to resume in {sweep_dir} with --grow")
            return 1
    configs = [point_config(sweep_dir, s.point, grown.get(s.point)) for s in rerun]
    problems = sweep_problems(configs, [jobspec_of(config, s.point, str(point_dir(sweep_dir, s.point)),
                                                   manifest["points"][s.point]["overrides"])
                                        for config, s in zip(configs, rerun)])
    if problems:  # launch's own checks, on today's machine and files: the data may be gone since the launch
        raise LaunchError("\n".join(f"cannot resume {sweep_dir}: {problem}; nothing was moved or submitted"
                                     for problem in problems))
    specs = [prepare_rerun(sweep_dir, manifest["points"][s.point], s, grown.get(s.point)) for s in rerun]
    settings = configs[0]
    settings.sweep.wait = wait
    write_manifest(sweep_dir, manifest)
    print(f"hpml: resuming {len(specs)} of {len(states)} point(s) of {manifest['sweep']}: "
          f"{', '.join(str(s.point) for s in specs)}")
    return run_points(sweep_dir, manifest, specs, settings)


def rerun_problems(sweep_dir: Path, entry: Dict) -> List[str]:
    """What would stop prepare_rerun half-way, one line each: the point's config.yaml (a file, a YAML mapping, a
    valid config), its manifest entry's previous_job_ids (a list), its attempts/ (a folder where present)."""
    folder = point_dir(sweep_dir, entry["point"])
    where = f"points/{entry['point']}"
    problems = []
    previous = entry.get("previous_job_ids", [])
    if not isinstance(previous, list):
        problems.append(f"manifest.json: point {entry['point']}'s previous_job_ids is {type(previous).__name__}, "
                        "not a list")
    attempts = folder / ATTEMPTS_DIR
    if attempts.exists() and not attempts.is_dir():
        problems.append(f"{where}/{ATTEMPTS_DIR} is not a folder")
    config = folder / CONFIG_FILE
    if not config.is_file():
        return problems + [f"{where}/{CONFIG_FILE} is missing or not a file"]
    try:
        values = yaml.safe_load(config.read_text())
        if not isinstance(values, dict):
            raise ValueError(f"not a YAML mapping but {type(values).__name__}")
        check_config(config_from_dict(migrated(values)[0]))  # an earlier hpml's keys read as today's
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problems.append(f"{where}/{CONFIG_FILE}: not valid YAML: {getattr(error, 'problem', None) or error}{at}")
    except (OSError, UnicodeDecodeError, ValueError, TypeError, KeyError) as error:
        problems.append(f"{where}/{CONFIG_FILE}: {one_line(error)}")
    return problems


def point_config(sweep_dir: Path, point: int, grown: Optional[Growth] = None) -> HpmlConfig:
    """The point's config as launched (rerun_problems has checked that it reads), with its grown resource."""
    return config_from_dict(config_values(sweep_dir, point, grown))


def config_values(sweep_dir: Path, point: int, grown: Optional[Growth] = None) -> Dict:
    """The point's config.yaml in today's schema (conf/migrations.py), with its grown resource."""
    values, _ = migrated(yaml.safe_load((point_dir(sweep_dir, point) / CONFIG_FILE).read_text()))
    if grown is not None and grown.key:
        group, key = grown.key.split(".")
        values[group][key] = grown.new
    return values


def grow_points(sweep_dir: Path, manifest: Dict, rerun: List[PointState]) -> Tuple[List[PointState],
                                                                                  Dict[int, Growth]]:
    """--grow: the points to rerun (those stopped by cluster.max_attempts or the partition's limits left out, one
    line each) and the growth of each point that ran out of memory or time (launcher/grow.py)."""
    configs = {s.point: point_config(sweep_dir, s.point) for s in rerun}
    specs = [jobspec_of(configs[s.point], s.point, str(point_dir(sweep_dir, s.point)),
                        manifest["points"][s.point]["overrides"]) for s in rerun if s.state in GROWS]
    had = backend_of_manifest(manifest).job_resources({s.point: s.job_id for s in rerun}, specs) if specs else {}
    kept, grown = [], {}
    for s in rerun:
        config, entry = configs[s.point], manifest["points"][s.point]
        change = growth(s.point, s.state, config.resources.mem_gb, config.resources.time_min,
                        config.resources.gpus_per_node, len(entry.get("previous_job_ids", [])) + 1,
                        config.cluster.max_attempts, had.get(s.point, JobResources(None, None, None, None)),
                        device=result_device(point_dir(sweep_dir, s.point)), constraint=config.cluster.constraint,
                        ladder=config.cluster.gpu_ladder)
        if change.key or change.stop:
            print(change.describe())
        if not change.stop:
            kept.append(s)
            grown[s.point] = change
    return kept, grown


def result_device(folder: Path) -> Optional[str]:
    """Where the point's worker ran ("cpu", "cuda"), from its result.json; None when no readable result says."""
    result = read_json(folder / RESULT_FILE)
    environment = result.get("environment") if isinstance(result, dict) else None
    device = environment.get("device") if isinstance(environment, dict) else None
    return device if isinstance(device, str) else None


def prepare_rerun(sweep_dir: Path, entry: Dict, state: Optional[PointState] = None,
                  grown: Optional[Growth] = None) -> JobSpec:
    """Moves the last attempt's files aside (points/<n>/attempts/<k>/, with a copy of its config.yaml and a record
    of the resources and end it had), writes the grown resource and an earlier hpml's keys in today's schema
    (conf/migrations.py, one line each) into config.yaml, and rebuilds the point's JobSpec from it. The epoch
    checkpoint stays, so the rerun resumes from it."""
    folder = point_dir(sweep_dir, entry["point"])
    changes = migrated(yaml.safe_load((folder / CONFIG_FILE).read_text()))[1]
    attempt = folder / ATTEMPTS_DIR / str(len(entry.get("previous_job_ids", [])))
    # telemetry sidecars belong to the attempt whose result.json names them (contract/telemetry_format.py)
    names = [RESULT_FILE, STATE_FILE, LOGS_DIR] + sorted(p.name for p in folder.glob(SIDECAR_GLOB))
    for name in names:
        if (folder / name).exists():
            attempt.mkdir(parents=True, exist_ok=True)
            (folder / name).rename(attempt / name)
    if entry.get("job_id"):
        values = config_values(sweep_dir, entry["point"])
        attempt.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(folder / CONFIG_FILE, attempt / CONFIG_FILE)
        write_json_atomic(attempt / ATTEMPT_RECORD, {
            "job_id": entry["job_id"], "state": state.state if state else None,
            "reason": state.reason if state else None, "resources": values["resources"]})
        entry.setdefault("previous_job_ids", []).append(entry["job_id"])
    for change in changes:  # the file as it was is in the attempt's folder when the point had run
        print(f"hpml: points/{entry['point']}/{CONFIG_FILE}: {change}")
    if (grown is not None and grown.key) or changes:
        text = yaml.dump(config_values(sweep_dir, entry["point"], grown), Dumper=yaml.CSafeDumper, sort_keys=False)
        (folder / f"{CONFIG_FILE}.tmp").write_text(text)
        os.replace(folder / f"{CONFIG_FILE}.tmp", folder / CONFIG_FILE)  # whole or not at all: workers read it
    entry["job_id"] = None
    return jobspec_of(point_config(sweep_dir, entry["point"]), entry["point"], str(folder), entry["overrides"])
