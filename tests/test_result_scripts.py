"""The H200 measurement scripts of docs/results (run_h200.sh) with DRY_RUN=1: every stage's `hpml launch`
is composed and checked (hpml launch --dry-run) on this machine, nothing runs, so a typo in a script's
overrides shows here and not after the GPU time is spent."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def dry_run(script: str, tmp_path: Path, **env: str) -> str:
    out = tmp_path / "out"
    done = subprocess.run(["bash", str(REPO / script)], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "DRY_RUN": "1", "OUT": str(out), "PATH": f"{Path(sys.executable).parent}:"
                               f"{os.environ['PATH']}", **env})
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["run.log"]  # nothing but the log: no results, no report
    return (out / "run.log").read_text()


def planned(log: str) -> list:
    """(stage, points) for every stage the log shows, in order."""
    stages = re.findall(r"^## stage (\S+) \(estimate \d+s\): hpml launch --dry-run", log, re.M)
    points = [int(n) for n in re.findall(r"^hpml: sweep \S+: (\d+) point\(s\)", log, re.M)]
    assert len(stages) == len(points), log
    return list(zip(stages, points))


def test_hw5_script_plans_every_stage_on_four_gpus(tmp_path):
    log = dry_run("docs/results/hw5_scaling/run_h200.sh", tmp_path, GPUS="4")
    assert planned(log) == [("bar", 2), ("ddp", 9), ("dp", 9), ("limit", 2), ("large.none", 1), ("large.linear", 2)]
    assert "resources.workers_per_node=1,2,4 workload.batch_size=32,128,512" in log
    assert "workload.dp_devices=1,2,4 workload.batch_size=32,128,512" in log  # issue 16: DP beside DDP, same batches


def test_hw5_script_on_two_gpus_and_a_stage_selection(tmp_path):
    log = dry_run("docs/results/hw5_scaling/run_h200.sh", tmp_path, GPUS="2", STAGES="large limit")
    assert planned(log) == [("limit", 2), ("large.none", 1), ("large.linear", 2)]  # the script's order
    assert "resources.workers_per_node=2 workload.batch_size=2048" in log


def test_horovod_script_plans_every_stage_on_four_gpus(tmp_path):
    log = dry_run("docs/results/horovod_synthetic/run_h200.sh", tmp_path, GPUS="4")
    assert planned(log) == [("allreduce", 2), ("allreduce_env.default", 2), ("allreduce_env.ring_simple", 2),
                            ("allreduce_env.channels32", 2),
                            ("allreduce_env.channels64", 2), ("paired", 2), ("bar", 2), ("bar", 2), ("bar", 2),
                            ("weak", 2),
                            ("strong", 3), ("methods", 4), ("collectives", 3), ("allreduce_n", 2)]
    assert re.findall(r"^## stage bar .*sweep\.repeat=(\d)", log, re.M) == ["0", "1", "2"]  # DDP/Horovod pairs
    assert re.search(r"^## stage paired .*workers_per_node=4 .*workload\.paired_rounds=60", log, re.M)


@pytest.mark.parametrize("script", ["docs/results/hw5_scaling/run_h200.sh",
                                    "docs/results/horovod_synthetic/run_h200.sh"])
def test_scripts_refuse_to_start_without_a_gpu_or_gpus(tmp_path, script):
    done = subprocess.run(["bash", str(REPO / script)], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={**os.environ, "OUT": str(tmp_path / "out"), "GPUS": "0"})
    assert done.returncode == 1
    assert "no GPU found" in done.stdout
