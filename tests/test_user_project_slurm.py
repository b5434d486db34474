"""hpml from inside a user's own project on the SLURM backend (issue 45, item 4): the folder of
tests/test_user_project.py (packages named hpml, submitit, hydra and hpml's old top-level names, each raising on
import) is where the launch, the resume and their report jobs start; the sbatch job's `python -m
submitit.core._submit` and the report job's `python -m hpml.launcher.cli` must not import them (they start in that
folder: SLURM's working directory is the submitting one)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.test_slurm import QUICK_LOOKS, manifest_of, sacct_state, slurm_cluster, wait_until  # noqa: F401 (slurm_cluster: fixture)
from tests.test_user_project import HPML_SCRIPT, project  # noqa: F401 (project: fixture)

pytestmark = pytest.mark.slurm


def hpml_from(home: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(HPML_SCRIPT), *args], cwd=home, env=env, capture_output=True, text=True, timeout=600)


def logs_of(sweep: Path) -> str:
    return "".join(path.read_text(errors="replace") for path in sweep.rglob("*")
                   if path.is_file() and path.suffix in (".out", ".err", ".log"))


def result_of(sweep: Path) -> dict:
    return json.loads((sweep / "points" / "0" / "result.json").read_text())


def test_launch_resume_and_report_jobs_on_slurm_import_nothing_of_the_users_folder(project):  # noqa: F811
    home, env = project
    env = {**env, "SLURM_CONF": os.environ["SLURM_CONF"]}  # set by the slurm_cluster fixture
    root = home / "slurm_sweeps"
    # hpml's small CNN: the claim is what the jobs import (hpml's models package among it), not ResNet-18's steps
    launched = hpml_from(home, env, "launch", "experiment=tiny/train", "workload.model=hpml_cnn", "cluster=slurm",
                         "sweep.wait=false", *QUICK_LOOKS, f"sweep.root={root}")  # the resume below waits with these
    assert launched.returncode == 0, launched.stdout + launched.stderr
    (sweep,) = [d for d in root.iterdir() if d.name != "latest"]
    first_report = manifest_of(sweep)["report_job"]["job_id"]
    wait_until(lambda: sacct_state(first_report) not in ("PENDING", "RUNNING", "?"), 300, "the report job's end")
    assert sacct_state(first_report) == "COMPLETED", logs_of(sweep)
    assert result_of(sweep)["status"] == "ok", logs_of(sweep)
    assert (sweep / "report" / "report.md").is_file()

    # resume runs the point again in a new sbatch job, and queues the report job again after it
    shutil.move(sweep / "points" / "0" / "result.json", sweep / "kept_result.json")
    (sweep / "points" / "0" / "state.json").unlink()
    shutil.rmtree(sweep / "report")
    resumed = hpml_from(home, env, "resume", str(sweep))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr + logs_of(sweep)
    assert result_of(sweep)["status"] == "ok"
    second_report = manifest_of(sweep)["report_job"]["job_id"]
    assert second_report != first_report
    wait_until(lambda: sacct_state(second_report) not in ("PENDING", "RUNNING", "?"), 300, "the second report job")
    assert sacct_state(second_report) == "COMPLETED", logs_of(sweep)
    assert (sweep / "report" / "report.md").is_file()

    for done in (launched, resumed):
        assert "was imported" not in done.stdout + done.stderr
    assert "was imported" not in logs_of(sweep)
