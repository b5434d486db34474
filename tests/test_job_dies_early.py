"""A job that dies before its workload starts (issue 32, item 2): the point ends failed, never pending or lost with
nothing, its reason is the last meaningful line of the job's own log, and the launch prints it. Real jobs that fail
that way: the job's Python cannot import hpml (a broken environment: a sitecustomize on PYTHONPATH that hides hpml
from the job processes only, as a stale or foreign installation would), and, on the SLURM test cluster, also a
cluster.setup line that fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_slurm import QUICK_LOOKS

BROKEN_JOB_ENVIRONMENT = """import os, sys
# only in the job's own processes (submitit sets these there), never in `hpml launch` itself
if os.environ.get("SUBMITIT_LOCAL_JOB_ID") or os.environ.get("SUBMITIT_EXECUTOR") == "slurm":
    sys.modules["hpml"] = None  # every `import hpml...` of the job fails
"""
IMPORT_ERROR = "ModuleNotFoundError: No module named 'hpml.launcher'; 'hpml' is not a package"


@pytest.fixture
def broken_env(tmp_path) -> dict:
    site = tmp_path / "broken_site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BROKEN_JOB_ENVIRONMENT)
    return {"PYTHONPATH": str(site)}


def only_sweep(root: Path) -> Path:
    (found,) = [d for d in (root / "sweeps").iterdir() if d.name != "latest"]
    return found


def reason_rows(text: str) -> list:
    return [line.strip().removeprefix("reason: ") for line in text.splitlines() if line.strip().startswith("reason:")]


def test_a_local_job_that_cannot_import_hpml_fails_with_its_logs_last_line(hpml, tmp_path, broken_env):
    done = hpml("launch", "experiment=tiny/synthetic", env=broken_env, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    expected = f"the job died before its point started: {IMPORT_ERROR} (log: jobs/"
    assert [row.startswith(expected) for row in reason_rows(done.stdout)] == [True], done.stdout  # the launch says it
    assert "0      failed" in done.stdout
    sweep = only_sweep(tmp_path)
    state = json.loads((sweep / "points" / "0" / "state.json").read_text())
    assert state["state"] == "failed" and state["reason"].startswith(expected)
    status = hpml("status", str(sweep))  # the launch is gone now: still failed with its reason, not lost
    assert "0      failed" in status.stdout and reason_rows(status.stdout)[0].startswith(expected), status.stdout


@pytest.mark.slurm
def test_a_slurm_cluster_setup_line_that_fails_ends_the_point_failed_with_that_line(hpml, tmp_path):
    done = hpml("launch", "cluster=slurm", "experiment=tiny/synthetic", "cluster.setup=[no_such_setup_command_x]",
                *QUICK_LOOKS, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    expected = "hpml: cluster.setup[0] failed with exit status 127: no_such_setup_command_x"
    assert reason_rows(done.stdout) == [expected], done.stdout
    sweep = only_sweep(tmp_path)
    assert not (sweep / "points" / "0" / "result.json").exists()  # the point never ran
    status = hpml("status", str(sweep))
    assert "0      failed" in status.stdout and reason_rows(status.stdout) == [expected], status.stdout


@pytest.mark.slurm
def test_a_slurm_job_that_cannot_import_hpml_ends_failed_with_its_logs_last_line(hpml, tmp_path, broken_env):
    done = hpml("launch", "cluster=slurm", "experiment=tiny/synthetic", *QUICK_LOOKS, env=broken_env, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert reason_rows(done.stdout) == [IMPORT_ERROR], done.stdout
    status = hpml("status", str(only_sweep(tmp_path)))
    assert "0      failed" in status.stdout and reason_rows(status.stdout) == [IMPORT_ERROR], status.stdout
