"""Disk and provenance (issue 11, class 7): a completed training point leaves no checkpoint behind unless
asked to keep it, a failed one keeps it for resume (tests/test_failure_reasons.py, on the launch whose killed worker
it also proves), and every result says which code and which GPUs made it."""

from __future__ import annotations

import json
import os
import subprocess
from importlib import metadata
from pathlib import Path

import pytest

from hpml.workloads.common import provenance
from tests.conftest import KEPT_CHECKPOINT

REPO = Path(__file__).resolve().parent.parent


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=30)


def test_a_completed_point_removes_its_checkpoint_and_records_the_code_that_ran(shared_sweep):
    # the study contract's tiny train point (tests/test_study_contract.py), launched once per test run
    point = shared_sweep("experiment=tiny/train") / "points" / "0"
    result = json.loads((point / "result.json").read_text())
    assert result["status"] == "ok"
    assert not (point / "checkpoint.pt").exists() and not (point / ".checkpoint.pt.tmp").exists()

    code = result["environment"]["hpml"]
    assert code["version"] == metadata.version("hpml") and code["version_error"] is None
    assert code["code_root"] == str(REPO)  # the workers ran this checkout's code, as the CLI did
    head = git("rev-parse", "HEAD")
    if head.returncode != 0:  # a copy without .git: null, and why
        assert code["git_commit"] is None and code["git_error"]
        return
    assert code["git_commit"] == head.stdout.strip()
    # Other work may change the tree meanwhile; clean vs modified is what must match.
    assert code["git_dirty"] == bool(git("status", "--porcelain").stdout.strip())
    assert code["git_error"] is None
    assert result["environment"]["gpu_driver"] is None and result["environment"]["gpu_topology"] is None


def test_keep_checkpoint_keeps_it(shared_sweep):
    # the sweep tests/test_checkpoint_damaged.py resumes copies of, launched once per test run
    point = shared_sweep(*KEPT_CHECKPOINT) / "points" / "0"
    assert json.loads((point / "result.json").read_text())["status"] == "ok"
    # hpml_cnn's fp32 weights and SGD momentum: 2 x 4 bytes x its 94,762 parameters (tests/test_train_memory_preflight.py)
    assert (point / "checkpoint.pt").stat().st_size > 2 * 4 * 94_762


# A killed point keeps its checkpoint for resume: proved on the same launch as its one-line reason, in
# tests/test_failure_reasons.py (test_a_sweeps_worker_killed_with_sigkill_..._and_keeps_its_checkpoint).


# --- the provenance lookups themselves: bounded, and null with a reason where nothing can be known ---

def init_repo(folder: Path) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "x"]):
        subprocess.run(["git", *args], cwd=folder, check=True, env=env, capture_output=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, check=True, capture_output=True,
                          text=True).stdout.strip()


def test_git_state_tells_clean_from_modified(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    commit = init_repo(tmp_path)
    assert provenance.git_state(tmp_path) == {"git_commit": commit, "git_dirty": False, "git_changes": 0,
                                              "git_error": None}
    (tmp_path / "a.py").write_text("x = 2\n")
    (tmp_path / "new.py").write_text("")
    state = provenance.git_state(tmp_path)
    assert (state["git_commit"], state["git_dirty"], state["git_changes"]) == (commit, True, 2)


def test_an_installed_copy_inside_some_checkout_gets_no_commit(tmp_path):
    (tmp_path / "README").write_text("a project whose .venv holds hpml\n")
    init_repo(tmp_path)
    site_packages = tmp_path / ".venv" / "lib" / "site-packages"
    site_packages.mkdir(parents=True)
    state = provenance.git_state(site_packages)
    assert state["git_commit"] is None and "installed copy" in state["git_error"]


def test_outside_any_checkout_commit_is_null_with_why(tmp_path):
    state = provenance.git_state(tmp_path)
    assert state["git_commit"] is None and state["git_dirty"] is None
    assert "not a git repository" in state["git_error"]


def test_lookups_are_bounded_in_time_and_size(tmp_path, monkeypatch):
    """A hanging or chatty nvidia-smi (a wedged driver, a huge fabric) costs at most the timeout and the cap."""
    assert "timed out after 0.2 s" in provenance.run_bounded(["sleep", "5"], timeout=0.2)[1]
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    chatty = fake_bin / "nvidia-smi"
    # underlined header as nvidia-smi 580 prints it into a pipe, then far more than the cap
    chatty.write_text("#!/bin/sh\nprintf '\\033[4mGPU0\\tGPU1\\033[0m\\n'\npython3 -c 'print(\"GPU0 NV18 \" * 5000)'\n")
    chatty.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ['PATH']}")
    topology, error = provenance.gpu_topology()
    assert error is None and len(topology) < provenance.TOPOLOGY_MAX_CHARS + 100
    assert topology.startswith("GPU0\tGPU1\nGPU0 NV18") and "\x1b" not in topology
    assert topology.endswith(f"(cut at {provenance.TOPOLOGY_MAX_CHARS} characters)")


def test_a_host_without_gpus_records_null_and_no_error():
    assert provenance.gpu_provenance(has_gpu=False) == {"gpu_driver": None, "gpu_topology": None,
                                                        "gpu_info_error": None}


@pytest.mark.gpu
@pytest.mark.skipif(not Path("/proc/driver/nvidia/gpus").is_dir(), reason="needs an NVIDIA GPU and its driver")
def test_a_gpu_host_records_its_driver_and_topology():
    info = provenance.gpu_provenance(has_gpu=True)
    assert info["gpu_info_error"] is None, info
    assert info["gpu_driver"][0].isdigit() and "GPU0" in info["gpu_topology"]
