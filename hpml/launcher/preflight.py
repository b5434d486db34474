"""Checks made before anything is submitted, by launch and resume alike: each problem is one line that says
what to change.

What to check is each workload's business (its schema's preflight_problems hook, conf/workload_contract.py):
this module names no workload.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import List, Sequence

from hpml.conf.model_input import save_meta_forwards
from hpml.conf.schema import HpmlConfig
from hpml.conf.validation import shown
from hpml.conf.workload_contract import WorkloadConfig
from hpml.launcher.backends import backend_of_specs, place
from hpml.launcher.jobspec import JobSpec


def sweep_problems(configs: Sequence[HpmlConfig], specs: Sequence[JobSpec], dry_run: bool = False) -> List[str]:
    """The one preflight of `hpml launch` and `hpml resume`, over the points about to be queued: the workloads'
    checks (data, model files, memory), then the backend's against the machine or cluster. One line per problem;
    [] when nothing stops them."""
    problems = config_problems(configs) + backend_of_specs(specs).preflight(configs, specs)
    if not dry_run and any(config.cluster.assume_gpus is not None for config in configs):
        problems.append("cluster.assume_gpus is for --dry-run only (planning a sweep for another machine); "
                        "drop it to run here")
    if not problems:  # the sweep passed (a dry run too): keep what the model checks found for the next launch
        save_meta_forwards()
    return problems


def config_problems(configs: Sequence[HpmlConfig]) -> List[str]:
    """Problems of the points' values that the schema alone cannot see, each reported once. Each point is placed
    first (where it runs, as its backend tells: backends.place), for the checks that compare it with a machine."""
    problems: List[str] = []
    for config in configs:
        place(config)
        try:
            problems.extend(config.workload.preflight_problems())
        except OSError as error:  # a path the file system refuses to look at: one line, whichever workload
            problems.append(unreadable_path_problem(config.workload, error))
    return list(dict.fromkeys(problems))


def unreadable_path_problem(workload: WorkloadConfig, error: OSError) -> str:
    """One line for an OSError that a workload's preflight met while looking at a path (a name too long, a folder
    on the way without permission, an I/O error), naming the workload key whose path it was."""
    failed = os.fsdecode(error.filename) if error.filename is not None else None
    reason = error.strerror or type(error).__name__
    for field in dataclasses.fields(workload):
        value = getattr(workload, field.name)
        if failed and isinstance(value, str) and value and _within(Path(failed), Path(value)):
            looked_at = "" if Path(failed) == Path(value) else f" (at {shown(failed)})"
            return f"workload.{field.name}={shown(value)}: the file system refuses to open it{looked_at}: {reason}"
    return f"workload preflight: the file system refuses to open {shown(failed)}: {reason}"


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
